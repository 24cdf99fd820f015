package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One writer per folder: a second lock of the same folder, even in the
// same process, is refused naming the pid that holds it; unlocking
// removes the lock file and lets the next writer in.
func TestLockDirOneWriter(t *testing.T) {
	dir := t.TempDir()
	unlock, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if pid := LockHolder(filepath.Join(dir, LockFile)); pid != os.Getpid() {
		t.Errorf("lock file holds pid %d, want %d", pid, os.Getpid())
	}
	_, err = LockDir(dir)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) || le.PID != os.Getpid() {
		t.Fatalf("second lock: %v", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("this process (pid %d) already has it open for writing", os.Getpid())) {
		t.Errorf("message %q", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, LockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left after unlock: %v", err)
	}
	again, err := LockDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	again()
	if err := UnlockFolder(nil); err != nil {
		t.Errorf("UnlockFolder(nil) = %v", err)
	}
}

// LockedError says which process writes the folder, or that one does
// when its pid cannot be read.
func TestLockedErrorMessages(t *testing.T) {
	for _, c := range []struct {
		e    LockedError
		want string
	}{
		{LockedError{Dir: "d", PID: 0}, "results folder d: another rttlab process is writing it"},
		{LockedError{Dir: "d", PID: 1}, "results folder d: another rttlab process (pid 1) is writing it"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}

// LockHolder reads the pid a holder wrote, and 0 for a file without one
// (or no file at all).
func TestLockHolder(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, LockFile)
	if got := LockHolder(p); got != 0 {
		t.Errorf("no file: %d", got)
	}
	os.WriteFile(p, []byte("garbage\n"), 0o644)
	if got := LockHolder(p); got != 0 {
		t.Errorf("garbage: %d", got)
	}
	os.WriteFile(p, []byte(" 4242\n"), 0o644)
	if got := LockHolder(p); got != 4242 {
		t.Errorf("4242: %d", got)
	}
}

// A lock on a folder that cannot hold a lock file is an error naming it.
func TestLockFolderOnMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	if _, err := LockFolder(dir); err == nil || !strings.HasPrefix(err.Error(), "lock results folder "+dir+": ") {
		t.Errorf("LockFolder = %v", err)
	}
}
