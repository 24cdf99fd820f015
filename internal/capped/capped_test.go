package capped

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	const max = 1 << 20
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(small, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, max+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(small, "plan", max); err != nil || string(b) != "name: x\n" {
		t.Fatalf("ReadFile(small) = %q, %v", b, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for path, want := range map[string]string{
		big:                            "is 1.0 MiB, over the limit of 1 MiB",
		"/dev/zero":                    "plan /dev/zero is a device: give a regular file of at most 1 MiB",
		dir:                            "is a folder",
		fifo:                           "is a named pipe",
		sock:                           "is a socket",
		filepath.Join(dir, "missing"):  "no such file",
		"/proc/self/status/not-a-file": "cannot open it",
	} {
		_, err := ReadFile(path, "plan", max)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s) = %v, want %q", path, err, want)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), "plan", max); !errors.Is(err, os.ErrNotExist) {
		t.Error("a missing file's error does not wrap os.ErrNotExist")
	}
	// A /proc file says its size is 0; it is read up to the cap.
	if b, err := ReadFile("/proc/self/status", "status", 64); err == nil {
		t.Errorf("a /proc file over the cap was read: %d bytes", len(b))
	}
	if b, err := ReadFile("/proc/self/status", "status", 1<<20); err != nil || len(b) == 0 {
		t.Errorf("a /proc file under the cap: %d bytes, %v", len(b), err)
	}
	for n, want := range map[int64]string{300: "300 bytes", 64 << 10: "64 KiB", 1 << 20: "1 MiB", 3 << 29: "1536 MiB", 1 << 30: "1 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLines(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 99) + "\n" + "last"
	l := NewLines(strings.NewReader(in), 100)
	var got []string
	for {
		b, err := l.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	if len(got) != 3 || got[0] != "short\n" || len(got[1]) != 100 || got[2] != "last" {
		t.Fatalf("lines %q", got)
	}
	// An endless line stops at the limit, having read little more.
	r := &countingReader{r: io.LimitReader(zeros{}, 1<<30)}
	l = NewLines(r, 1<<16)
	if _, err := l.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("endless line: %v", err)
	}
	if r.n > 1<<17 {
		t.Errorf("read %d bytes of an endless line with a 64 KiB limit", r.n)
	}
	if _, err := NewLines(bytes.NewReader(nil), 10).Next(); err != io.EOF {
		t.Errorf("empty input: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
