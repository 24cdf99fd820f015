package vmtest

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"os"
	"strings"
)

// Paths inside the initramfs that the guest reads.
const (
	guestModDir   = "/modules"       // <name>.ko of each module
	guestModOrder = "/modules/order" // the names, one a line, in load order
)

// writeInitramfs writes a gzip-compressed newc cpio archive to path: the
// guest's init binary as /init, the console and null devices, the
// folders the guest mounts on, the modules (plain ELF images) with their
// load order, and the host files.
func writeInitramfs(path string, init []byte, mods []module, files []hostFile) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create initramfs: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	zw, err := gzip.NewWriterLevel(bw, gzip.BestSpeed)
	if err != nil {
		f.Close()
		return fmt.Errorf("gzip: %w", err)
	}
	c := newCpioWriter(zw)
	for _, d := range []string{"dev", "proc", "sys", "run", "tmp", "etc"} {
		c.Dir(d, 0o755)
	}
	c.CharDev("dev/console", 0o600, 5, 1)
	c.CharDev("dev/null", 0o666, 1, 3)
	c.File("init", 0o755, init)
	var order strings.Builder
	for _, m := range mods {
		c.File(guestModDir+"/"+m.Name+".ko", 0o644, m.Data)
		order.WriteString(m.Name + "\n")
	}
	c.File(guestModOrder, 0o644, []byte(order.String()))
	for _, h := range files {
		if h.Link != "" {
			c.Symlink(h.Path, h.Link)
		} else {
			c.File(h.Path, h.Mode, h.Data)
		}
	}
	err = c.Close()
	if cerr := zw.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("gzip: %w", cerr)
	}
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write initramfs: %w", ferr)
	}
	if ferr := f.Close(); err == nil && ferr != nil {
		err = fmt.Errorf("write initramfs: %w", ferr)
	}
	return err
}
