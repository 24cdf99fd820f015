package netem

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNetNS runs fn on an OS thread that has joined the network namespace at
// path (a file such as /var/run/netns/NAME or /proc/PID/ns/net). With an
// empty path fn runs in the caller's namespace. Sockets created and
// processes started by fn live in that namespace. The thread is returned to
// its original namespace afterwards; if that fails it is discarded (the
// goroutine exits while still locked, which makes the runtime end the
// thread).
func inNetNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open network namespace %s: %w", path, err)
	}
	defer target.Close()

	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace %s: %w (needs CAP_SYS_ADMIN)", path, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: the runtime ends it with this goroutine.
			errc <- ferr
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
