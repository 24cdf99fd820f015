// Package capped reads the files a user hands rttlab (plans, env files,
// compose files, results folders) with limits: a regular file only, a
// whole file up to a size, a line up to a length. Nothing a user names is
// read without one: a plan of /dev/zero is refused before a byte is read.
package capped

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ReadFile reads a file a user named: a regular file (a device, a pipe
// or a folder is refused by its kind, before any read) of at most max
// bytes. what names the file in errors ("plan", "env file"). A file that
// grows past max while it is read, or reports a size of 0 as /proc files
// do, is still cut at max+1 bytes and refused.
func ReadFile(path, what string, max int64) ([]byte, error) {
	f, st, err := open(path, what, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, fmt.Errorf("%s %s is %s, over the limit of %s", what, path, Size(st.Size()), Size(max))
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: cannot read it: %v", what, path, errors.Unwrap(err))
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s %s is over the limit of %s (it grew while read)", what, path, Size(max))
	}
	return data, nil
}

// Open opens a regular file a user named for reading in lines (with a
// Lines reader); what names it in errors. A missing file's error wraps
// os.ErrNotExist.
func Open(path, what string) (*os.File, error) {
	f, _, err := open(path, what, 0)
	return f, err
}

func open(path, what string, max int64) (*os.File, os.FileInfo, error) {
	// O_NONBLOCK: opening a named pipe must not wait for a writer before
	// its kind is refused; reads of a regular file ignore the flag.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, notExist(fmt.Sprintf("%s %s: no such file", what, path))
		}
		if errors.Is(err, os.ErrPermission) {
			return nil, nil, fmt.Errorf("%s %s: permission denied: make it readable", what, path)
		}
		if st, serr := os.Stat(path); serr == nil && !st.Mode().IsRegular() {
			return nil, nil, notRegular(path, what, st, max)
		}
		return nil, nil, fmt.Errorf("%s %s: cannot open it: %v", what, path, errors.Unwrap(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s %s: cannot stat it: %v", what, path, errors.Unwrap(err))
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, what, st, max)
	}
	return f, st, nil
}

// notExist is a missing file's error: its own words, and errors.Is
// os.ErrNotExist.
type notExist string

func (e notExist) Error() string        { return string(e) }
func (e notExist) Is(target error) bool { return target == os.ErrNotExist }

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
	if max <= 0 {
		return fmt.Errorf("%s %s is %s: give a regular file", what, path, kind)
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

// ErrLineTooLong is a line over a Lines reader's limit.
var ErrLineTooLong = errors.New("line too long")

// Lines reads '\n'-terminated lines of at most max bytes each.
type Lines struct {
	r   *bufio.Reader
	max int
}

// NewLines reads lines of at most max bytes from r.
func NewLines(r io.Reader, max int) *Lines {
	return &Lines{r: bufio.NewReaderSize(r, min(max, 1<<16)), max: max}
}

// Next returns the next line with its '\n' (a last line without one as
// it is) and io.EOF after the last. A line longer than max returns
// ErrLineTooLong after reading at most max plus one buffer (64 KiB) of it.
func (l *Lines) Next() ([]byte, error) {
	var out []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > l.max {
			return nil, fmt.Errorf("%w: over %s", ErrLineTooLong, Size(int64(l.max)))
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(out) > 0:
			return out, nil
		case err != nil:
			return nil, err
		}
		return out, nil
	}
}
