package raw

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/results"
)

// A flock belongs to an open file description, so a second Open of a
// folder is refused even in the process that holds it; Close lets the
// next one in.
func TestLockSecondOpenRefused(t *testing.T) {
	f, _ := newTestFolder(t)
	dir := f.Dir()
	pid := strconv.Itoa(os.Getpid())
	if b, err := os.ReadFile(filepath.Join(dir, results.LockFile)); err != nil || string(b) != pid+"\n" {
		t.Fatalf("%s = %q, %v; want the pid %s", results.LockFile, b, err, pid)
	}
	samples, _ := os.ReadFile(filepath.Join(dir, SamplesFile))

	_, err := Open(dir)
	var le *results.LockedError
	if !errors.Is(err, results.ErrLocked) || !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Fatalf("Open while Create's Folder is open: err = %v, want a LockedError with pid %s", err, pid)
	}
	if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, "pid "+pid) || strings.Contains(msg, "\n") {
		t.Errorf("err = %q, want one line naming %s and pid %s", msg, dir, pid)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, SamplesFile)); string(after) != string(samples) {
		t.Error("a refused Open changed samples.jsonl")
	}
	// Reading needs no lock.
	if _, err := Load(dir); err != nil {
		t.Errorf("Load while locked: %v", err)
	}

	mustNoErr(t, f.Close())
	if _, err := os.Stat(filepath.Join(dir, results.LockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Close: %v, want it removed", results.LockFile, err)
	}
	g, err := Open(dir)
	mustNoErr(t, err)
	if _, err := Open(dir); !errors.Is(err, results.ErrLocked) {
		t.Errorf("Open while Open's Folder is open: err = %v, want ErrLocked", err)
	}
	mustNoErr(t, g.AppendProbes([]Probe{{App: "go", Kind: ProbeICMP, RTTms: 0.5, N: 50, MeanMs: 0.56}}))
	mustNoErr(t, g.Close())
	mustNoErr(t, g.Close()) // a second Close is harmless
	h, err := Open(dir)
	mustNoErr(t, err)
	mustNoErr(t, h.Close())
}

// A .lock file that nobody holds (its writer crashed) blocks nothing.
func TestLockStaleFileDoesNotBlock(t *testing.T) {
	f, _ := newTestFolder(t)
	mustNoErr(t, f.Close())
	lp := filepath.Join(f.Dir(), results.LockFile)
	mustNoErr(t, os.WriteFile(lp, []byte("999999999\n"), 0o644))
	g, err := Open(f.Dir())
	mustNoErr(t, err)
	if b, _ := os.ReadFile(lp); string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Errorf("%s = %q, want this process's pid", results.LockFile, b)
	}
	mustNoErr(t, g.Close())
}

// A missing folder is still reported by what is missing in it.
func TestLockOpenMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), results.ManifestFile) {
		t.Errorf("err = %v, want it to name %s", err, results.ManifestFile)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("Open created %s", dir)
	}
}

// Another process holding the folder is named with its pid; once it is
// killed (no Close, as in a crash) its lock is gone though its .lock file
// stays, and the folder opens.
func TestLockHeldByAnotherProcess(t *testing.T) {
	f, _ := newTestFolder(t)
	mustNoErr(t, f.Close())
	dir := f.Dir()

	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), "RTTLAB_LOCK_HELPER_DIR="+dir)
	stdin, err := cmd.StdinPipe()
	mustNoErr(t, err)
	stdout, err := cmd.StdoutPipe()
	mustNoErr(t, err)
	mustNoErr(t, cmd.Start())
	defer func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}

	_, err = Open(dir)
	want := "results folder " + dir + ": another rttlab process (pid " + strconv.Itoa(cmd.Process.Pid) + ") is writing it"
	if !errors.Is(err, results.ErrLocked) || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}

	mustNoErr(t, cmd.Process.Kill())
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, results.LockFile)); err != nil {
		t.Fatalf("the killed holder's %s: %v, want it left behind", results.LockFile, err)
	}
	g, err := Open(dir)
	mustNoErr(t, err)
	mustNoErr(t, g.Close())
}

// TestLockHelperProcess is the other process of TestLockHeldByAnotherProcess:
// it opens the folder, says so, and holds it until its stdin closes.
func TestLockHelperProcess(t *testing.T) {
	dir := os.Getenv("RTTLAB_LOCK_HELPER_DIR")
	if dir == "" {
		t.Skip("run by TestLockHeldByAnotherProcess")
	}
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
	f.Close()
}
