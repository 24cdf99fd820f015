package main

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var built struct {
	once sync.Once
	bin  string
	err  error
}

// builtBinary builds rttlab once for the tests that run it as a user does.
func builtBinary(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command to build rttlab")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "rttlab-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "rttlab")
		if out, err := exec.Command(goBin, "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// Everything rttlab reads from a user is capped: an endless plan, env
// file or results file is refused in one line, exit 2 for a usage error,
// with little memory. The binary runs under an address-space limit of
// 4 GiB (a cap that failed would end there rather than take the host's
// memory) and a timeout (a named pipe must not block the read).
func TestEndlessInputsUnderMemoryLimit(t *testing.T) {
	bin := builtBinary(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "plan.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// A results folder whose samples are one endless line.
	res := testFolder(t)
	if err := os.WriteFile(filepath.Join(res, "samples.jsonl"), make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	zeroManifest := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(zeroManifest, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--plan", "/dev/zero"}, 2, "plan /dev/zero is a device: give a regular file of at most 1 MiB"},
		{[]string{"place", "--plan", "/dev/zero"}, 2, "plan /dev/zero is a device"},
		{[]string{"workers", "--plan", "/dev/zero"}, 2, "plan /dev/zero is a device"},
		{[]string{"run", "--plan", fifo}, 2, "is a named pipe"},
		{[]string{"run", "--plan", "smoke", "--app-image", "example/shop:1", "--routes", "/a", "--env-file", "/dev/zero"}, 2, "env file /dev/zero is a device"},
		{[]string{"report", res}, 1, "samples.jsonl:1: line too long: over 1 MiB"},
		{[]string{"report", zeroManifest}, 1, "manifest.json is a device"},
	} {
		cmd := exec.Command("sh", append([]string{"-c", `ulimit -v 4194304 && exec "$0" "$@"`, bin}, c.args...)...)
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("%v: still reading after 60 s", c.args)
			continue
		}
		code := cmd.ProcessState.ExitCode()
		// The child's high-water mark includes the test binary it was
		// forked from (a race-enabled one is over 100 MiB), so it is
		// logged, not held to a figure: the address-space limit is what
		// bounds a read that was not capped.
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
		t.Logf("%v: exit %d, peak RSS at most %d KiB: %s", c.args, code, rss, strings.TrimSpace(stderr.String()))
		if code != c.code || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line with %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

// A reader that goes away (rttlab ... | head) ends a command through its
// own error path and cleanup, not by the default SIGPIPE death that would
// leave its containers: here a load that would print a million lines,
// whose reader stops after the first.
func TestBrokenPipeEndsLikeAnInterrupt(t *testing.T) {
	bin := builtBinary(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	cmd := exec.Command(bin, "agent", "load", "--url", srv.URL, "--route", "/x", "--requests", "1000000", "--warmup", "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(first, `"seq":0`) {
		t.Errorf("first line %q: %v", first, err)
	}
	out.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("still running 30 s after its reader went away")
	}
	// It ends by itself: through the failed write (1) or the cancelled
	// context (130), whichever comes first, never by the signal.
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() || (ws.ExitStatus() != 1 && ws.ExitStatus() != 130) || !strings.Contains(stderr.String(), "rttlab: ") {
		t.Errorf("ended with %v (signaled %v, status %d), want exit status 1 or 130 with its message; stderr: %s", err, ws.Signaled(), ws.ExitStatus(), stderr.String())
	}
}
