package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LockFile is the file of a results folder that the process writing the
// folder holds an exclusive flock on, with its pid inside. The lock, not
// the file, is what counts: the kernel drops a flock when its holder
// exits, crashed or not, so a .lock left behind blocks nobody.
const LockFile = ".lock"

// ErrLocked reports that another process holds a results folder's lock.
var ErrLocked = errors.New("results folder is being written by another process")

// LockedError is the error of Create and Open on a folder that another
// open Folder holds. It matches ErrLocked.
type LockedError struct {
	Dir string
	PID int // 0 when the holder's pid could not be read
}

func (e *LockedError) Error() string {
	switch {
	case e.PID == 0:
		return fmt.Sprintf("results folder %s: another rttlab process is writing it", e.Dir)
	case e.PID == os.Getpid():
		return fmt.Sprintf("results folder %s: this process (pid %d) already has it open for writing", e.Dir, e.PID)
	}
	return fmt.Sprintf("results folder %s: another rttlab process (pid %d) is writing it", e.Dir, e.PID)
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// LockFolder takes the folder's lock without waiting and writes this
// process's pid into the lock file. A flock belongs to an open file
// description, so a second lockFolder of the same folder fails even in the
// same process.
func LockFolder(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	for {
		// No O_TRUNC: the holder's pid must stay readable.
		h, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock results folder %s: %w", dir, err)
		}
		err = flock(h, unix.LOCK_EX|unix.LOCK_NB)
		if errors.Is(err, unix.EWOULDBLOCK) {
			h.Close()
			return nil, &LockedError{Dir: dir, PID: LockHolder(path)}
		}
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("lock results folder %s: %w", dir, err)
		}
		// unlockFolder removes the file before it lets go: a lock won on
		// a file no longer at path is no lock, open the new one.
		if same, err := samePath(h, path); err != nil || !same {
			h.Close()
			if err != nil {
				return nil, fmt.Errorf("lock results folder %s: %w", dir, err)
			}
			continue
		}
		if err := h.Truncate(0); err == nil {
			_, err = h.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		if err != nil {
			UnlockFolder(h)
			return nil, fmt.Errorf("lock results folder %s: write pid: %w", dir, err)
		}
		return h, nil
	}
}

// UnlockFolder removes the lock file and then releases the lock, so a
// finished folder holds only its data.
func UnlockFolder(h *os.File) error {
	if h == nil {
		return nil
	}
	rerr := os.Remove(h.Name())
	if errors.Is(rerr, os.ErrNotExist) {
		rerr = nil
	}
	return errors.Join(rerr, h.Close())
}

func flock(h *os.File, how int) error {
	for {
		err := unix.Flock(int(h.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}

func samePath(h *os.File, path string) (bool, error) {
	hi, err := h.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(hi, pi), nil
}

// LockHolder returns the pid in the lock file, 0 if there is none. The
// holder writes it just after taking the lock, so an empty file is read
// again for a moment.
func LockHolder(path string) int {
	for range 20 {
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0
}

// LockDir takes the results-folder lock of dir for a study that keeps its
// own files (the placement and worker studies): a second process gets
// *LockedError naming the holder. The returned function releases it.
func LockDir(dir string) (unlock func() error, err error) {
	h, err := LockFolder(dir)
	if err != nil {
		return nil, err
	}
	return func() error { return UnlockFolder(h) }, nil
}
