package vmtest

import (
	"os"
	"testing"
)

// TestMain runs the guest when this test binary is the VM's /init (PID 1
// with the kernel command line's marker in its environment); anywhere
// else it runs the tests.
func TestMain(m *testing.M) {
	if os.Getpid() == 1 && os.Getenv(guestEnvKey) == "1" {
		guestMain() // powers the VM off; does not return
	}
	os.Exit(m.Run())
}
