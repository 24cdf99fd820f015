package vmtest

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeModule is a minimal ELF object whose .modinfo section holds the
// given key=value strings, as a kernel module's does.
func fakeModule(t *testing.T, modinfo ...string) []byte {
	t.Helper()
	info := []byte(strings.Join(modinfo, "\x00") + "\x00")
	shstr := []byte("\x00.modinfo\x00.shstrtab\x00")
	const ehsize, shentsize = 64, 64
	infoOff := uint64(ehsize)
	strOff := infoOff + uint64(len(info))
	shOff := (strOff + uint64(len(shstr)) + 7) &^ 7
	var b bytes.Buffer
	hdr := elf.Header64{
		Type: uint16(elf.ET_REL), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Shoff: shOff, Ehsize: ehsize, Shentsize: shentsize, Shnum: 3, Shstrndx: 2,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(binary.Write(&b, binary.LittleEndian, hdr))
	b.Write(info)
	b.Write(shstr)
	b.Write(make([]byte, shOff-uint64(b.Len())))
	for _, s := range []elf.Section64{
		{},
		{Name: 1, Type: uint32(elf.SHT_PROGBITS), Off: infoOff, Size: uint64(len(info)), Addralign: 1},
		{Name: 10, Type: uint32(elf.SHT_STRTAB), Off: strOff, Size: uint64(len(shstr)), Addralign: 1},
	} {
		must(binary.Write(&b, binary.LittleEndian, s))
	}
	return b.Bytes()
}

func TestModuleOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kernel/net/a.ko", fakeModule(t, "license=GPL", "depends=b,c-x,e", "name=a"))
	write("kernel/net/b.ko", fakeModule(t, "depends=c_x"))
	write("kernel/lib/c-x.ko", fakeModule(t, "depends="))
	write("kernel/lib/d.ko", fakeModule(t, "name=d"))
	write("modules.builtin", []byte("kernel/lib/e.ko\n"))

	mods, err := moduleOrder(dir, []string{"a", "d", "b"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, " "); got != "c_x b a d" {
		t.Fatalf("order %q, want dependencies first: c_x b a d", got)
	}
	if _, err := moduleOrder(dir, []string{"zz"}); err == nil || !strings.Contains(err.Error(), "module zz is not under") {
		t.Fatalf("missing module: %v", err)
	}
	write("kernel/net/f.ko", fakeModule(t, "depends=gone"))
	if _, err := moduleOrder(dir, []string{"f"}); err == nil || !strings.Contains(err.Error(), "gone (needed by f)") {
		t.Fatalf("missing dependency: %v", err)
	}
}
