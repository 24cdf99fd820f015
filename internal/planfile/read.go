// Package planfile is the one reader of rttlab's YAML plan files (the RTT
// study's, the placement study's and the worker study's): a capped read of
// a regular file, decoding with unknown fields refused, the line of every
// field, and errors of the form "file:line: what is wrong" in the plan's
// words rather than Go's.
//
// It also holds the capped read every other file a user hands rttlab goes
// through (env files, compose files, results files): nothing a user names
// is read without a limit.
package planfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxBytes is the largest plan file read: the largest built-in plan
// written out is under 4 KiB, a plan with a hundred own apps and their
// request mixes under 100 KiB.
const MaxBytes = 1 << 20

// Read returns the contents of the plan file at path, refusing anything
// that is not a regular file or is larger than MaxBytes before reading
// more than MaxBytes of it. A missing file's error wraps os.ErrNotExist.
func Read(path string) ([]byte, error) {
	return ReadCapped(path, "plan", MaxBytes)
}

// ReadCapped reads a file a user named: a regular file (a device, a pipe
// or a folder is refused by its kind, before any read) of at most max
// bytes. what names the file in errors ("plan", "env file"). A file that
// grows past max while it is read, or reports a size of 0 as /proc files
// do, is still cut at max+1 bytes and refused.
func ReadCapped(path, what string, max int64) ([]byte, error) {
	// O_NONBLOCK: opening a named pipe must not wait for a writer before
	// its kind is refused; reads of a regular file ignore the flag.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s %s: no such file: %w", what, path, os.ErrNotExist)
		}
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%s %s: permission denied: make it readable", what, path)
		}
		if st, serr := os.Stat(path); serr == nil && !st.Mode().IsRegular() {
			return nil, notRegular(path, what, st, max)
		}
		return nil, fmt.Errorf("%s %s: cannot open it: %v", what, path, errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s %s: cannot stat it: %v", what, path, errors.Unwrap(err))
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, what, st, max)
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s %s is %s, over the limit of %s for a %s", what, path, Size(st.Size()), Size(max), what)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: cannot read it: %v", what, path, errors.Unwrap(err))
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s %s is over the limit of %s for a %s (it grew while read)", what, path, Size(max), what)
	}
	return data, nil
}

// notRegular refuses a file by its kind.
func notRegular(path, what string, st os.FileInfo, max int64) error {
	kind := "not a regular file"
	switch {
	case st.IsDir():
		kind = "a folder"
	case st.Mode()&os.ModeDevice != 0:
		kind = "a device"
	case st.Mode()&os.ModeNamedPipe != 0:
		kind = "a named pipe"
	case st.Mode()&os.ModeSocket != 0:
		kind = "a socket"
	}
	return fmt.Errorf("%s %s is %s: give a regular file of at most %s", what, path, kind, Size(max))
}

// Size writes a byte count the way the limits are written: 1 MiB, 64 KiB,
// 300 bytes.
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		if n%(1<<20) == 0 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		if n%(1<<10) == 0 {
			return fmt.Sprintf("%d KiB", n>>10)
		}
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
