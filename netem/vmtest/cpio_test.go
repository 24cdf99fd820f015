package vmtest

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
)

// cpioEntry is one entry read back from a newc archive.
type cpioEntry struct {
	name       string
	mode       uint32
	rmaj, rmin uint32
	data       string
}

// readNewc parses a newc archive up to its trailer.
func readNewc(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		if err != nil {
			t.Fatalf("header at %d field %d: %v", off, i, err)
		}
		return uint32(v)
	}
	for {
		if off%4 != 0 || string(b[off:off+6]) != "070701" {
			t.Fatalf("no newc header at %d", off)
		}
		mode, size, rmaj, rmin, nameLen := field(1), field(6), field(9), field(10), field(11)
		name := string(b[off+110 : off+110+int(nameLen)-1])
		dataOff := (off + 110 + int(nameLen) + 3) &^ 3
		e := cpioEntry{name: name, mode: mode, rmaj: rmaj, rmin: rmin, data: string(b[dataOff : dataOff+int(size)])}
		off = (dataOff + int(size) + 3) &^ 3
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return out
		}
		out = append(out, e)
	}
}

func TestCpioWriter(t *testing.T) {
	var buf bytes.Buffer
	c := newCpioWriter(&buf)
	c.File("/usr/sbin/x", 0o755, []byte("12345"))
	c.Symlink("usr/sbin/y", "x")
	c.CharDev("dev/console", 0o600, 5, 1)
	c.Dir("usr", 0o755) // already there: not repeated
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range readNewc(t, buf.Bytes()) {
		got = append(got, fmt.Sprintf("%s %o %d:%d %q", e.name, e.mode, e.rmaj, e.rmin, e.data))
	}
	want := []string{
		`usr 40755 0:0 ""`,
		`usr/sbin 40755 0:0 ""`,
		`usr/sbin/x 100755 0:0 "12345"`,
		`usr/sbin/y 120777 0:0 "x"`,
		`dev 40755 0:0 ""`,
		`dev/console 20600 5:1 ""`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("entries\n got %q\nwant %q", got, want)
	}
}
