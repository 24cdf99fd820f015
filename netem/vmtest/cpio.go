package vmtest

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// cpioWriter writes a newc ("070701") cpio archive, the format the kernel
// unpacks as an initramfs. Parent folders are added on first use.
type cpioWriter struct {
	w    io.Writer
	ino  uint32
	dirs map[string]bool
	err  error
}

// Mode bits of a newc header (S_IFMT and friends).
const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
	cpioLink = 0o120000
	cpioChar = 0o020000
)

func newCpioWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: w, ino: 1, dirs: map[string]bool{".": true, "/": true, "": true}}
}

// Dir adds a folder (and its parents).
func (c *cpioWriter) Dir(name string, perm uint32) {
	name = clean(name)
	if c.dirs[name] {
		return
	}
	c.Dir(path.Dir(name), 0o755)
	c.dirs[name] = true
	c.entry(name, cpioDir|perm, 0, 0, nil)
}

// File adds a regular file.
func (c *cpioWriter) File(name string, perm uint32, data []byte) {
	name = clean(name)
	c.Dir(path.Dir(name), 0o755)
	c.entry(name, cpioFile|perm, 0, 0, data)
}

// Symlink adds a symbolic link to target.
func (c *cpioWriter) Symlink(name, target string) {
	name = clean(name)
	c.Dir(path.Dir(name), 0o755)
	c.entry(name, cpioLink|0o777, 0, 0, []byte(target))
}

// CharDev adds a character device node.
func (c *cpioWriter) CharDev(name string, perm, major, minor uint32) {
	name = clean(name)
	c.Dir(path.Dir(name), 0o755)
	c.entry(name, cpioChar|perm, major, minor, nil)
}

// Close writes the trailer and reports the first error.
func (c *cpioWriter) Close() error {
	c.entry("TRAILER!!!", 0, 0, 0, nil)
	return c.err
}

func clean(name string) string { return strings.TrimPrefix(path.Clean("/"+name), "/") }

func (c *cpioWriter) entry(name string, mode, rmajor, rminor uint32, data []byte) {
	if c.err != nil {
		return
	}
	nlink := uint32(1)
	if mode&0o170000 == cpioDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rmajor, rminor, len(name)+1, 0)
	c.ino++
	buf := make([]byte, 0, len(hdr)+len(name)+8)
	buf = append(buf, hdr...)
	buf = append(buf, name...)
	buf = append(buf, 0)
	buf = pad4(buf)
	if _, err := c.w.Write(buf); err != nil {
		c.err = fmt.Errorf("write cpio header of %s: %w", name, err)
		return
	}
	if len(data) == 0 {
		return
	}
	if _, err := c.w.Write(data); err != nil {
		c.err = fmt.Errorf("write cpio data of %s: %w", name, err)
		return
	}
	if n := (4 - len(data)%4) % 4; n > 0 {
		if _, err := c.w.Write(make([]byte, n)); err != nil {
			c.err = fmt.Errorf("write cpio padding of %s: %w", name, err)
		}
	}
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
