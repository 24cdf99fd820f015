package kube

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sessionStubs are stand-ins for the commands that need privileges: each
// writes its name and arguments to calls and runs what follows its "--"
// (mount runs nothing).
var sessionStubs = map[string]string{
	"unshare": `echo "unshare $*" >>"$CALLS"; while [ "$1" != -- ]; do shift; done; shift; exec "$@"`,
	"nsenter": `echo "nsenter $*" >>"$CALLS"; while [ "$1" != -- ]; do shift; done; shift; exec "$@"`,
	"setpriv": `echo "setpriv $*" >>"$CALLS"; while [ "$1" != -- ]; do shift; done; shift; exec "$@"`,
	"mount":   `echo "mount $*" >>"$CALLS"`,
}

// TestSessionScriptsGiveEachSessionItsRun runs the start and exec
// scripts with stand-ins for unshare, mount, nsenter and setpriv: the
// session's command and an exec in it both run with the session's run
// folder bound on /run/rttlab in a mount namespace of their own, in the
// target process's network namespace with the session's capabilities.
func TestSessionScriptsGiveEachSessionItsRun(t *testing.T) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip("no /proc/self/cgroup to find a process by")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	// Any process whose cgroup paths hold this string stands for the
	// target's container.
	cid := lastLine(string(cg))
	tmp := t.TempDir()
	bin, root, calls := filepath.Join(tmp, "bin"), filepath.Join(tmp, "root"), filepath.Join(tmp, "calls")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range sessionStubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!"+sh+"\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "CALLS="+calls)
	run := func(script string, args ...string) (string, error) {
		c := exec.Command(sh, append([]string{"-c", strings.ReplaceAll(script, sessionRoot, root), "sh"}, args...)...)
		c.Env = env
		out, err := c.CombinedOutput()
		return string(out), err
	}

	if out, err := run(sessionStartScript, "s1", cid, "-all,+net_admin", "sh", "-c", "echo started; exit 7"); err != nil {
		t.Fatalf("start: %v: %s", err, out)
	}
	d := filepath.Join(root, "s1")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, _ := os.ReadFile(filepath.Join(d, "exit")); strings.TrimSpace(string(b)) == "7" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session's command did not end with its exit status")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "log")); string(b) != "started\n" {
		t.Errorf("session log = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(d, "run")); err != nil || !fi.IsDir() {
		t.Errorf("no run folder of the session: %v", err)
	}
	target, _ := os.ReadFile(filepath.Join(d, "target"))
	pid := strings.TrimSpace(string(target))
	if b, _ := os.ReadFile(filepath.Join(d, "cid")); strings.TrimSpace(string(b)) != cid {
		t.Errorf("session cid = %q, want %q", b, cid)
	}
	if out, err := run(sessionExecScript, "s1", "echo", "in the session"); err != nil || out != "in the session\n" {
		t.Errorf("exec = %q, %v", out, err)
	}
	b, _ := os.ReadFile(calls)
	want := strings.Repeat("unshare --mount --propagation private -- sh -c mount --bind \"$0\" "+root+" && exec \"$@\" "+d+"/run nsenter -t "+pid+" -n -- setpriv --bounding-set=-all,+net_admin --inh-caps=-all -- PROG\n"+
		"mount --bind "+d+"/run "+root+"\n"+
		"nsenter -t "+pid+" -n -- setpriv --bounding-set=-all,+net_admin --inh-caps=-all -- PROG\n"+
		"setpriv --bounding-set=-all,+net_admin --inh-caps=-all -- PROG\n", 2)
	want = strings.Replace(want, "PROG", "sh -c echo started; exit 7", 3)
	want = strings.Replace(want, "PROG", "echo in the session", 3)
	if string(b) != want {
		t.Errorf("calls:\n%s\nwant:\n%s", b, want)
	}

	// A target whose process is no longer the container's is refused
	// rather than entered.
	if err := os.WriteFile(filepath.Join(d, "cid"), []byte("no-such-container\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(sessionExecScript, "s1", "echo", "in the session")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 126 || !strings.Contains(out, "is gone") {
		t.Errorf("exec with the target gone = %q, %v; want exit 126 saying the process is gone", out, err)
	}
}
