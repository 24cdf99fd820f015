package vmtest

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// guestModules are the modules the guest loads (their dependencies come
// along): veth and the bridge for the topology, br_netfilter for the
// bridge's netfilter hooks, netem, prio and u32 for the kernel shaper,
// and NFQUEUE with the matches the userspace shaper's rules use, for
// both iptables flavours (nf_tables + nft_compat, and legacy ip_tables).
// crc32c_generic comes first: nf_tables needs libcrc32c, which asks for a
// crc32c through modprobe (a softdep), and the guest has no modprobe.
var guestModules = []string{
	"crc32c_generic",
	"veth", "bridge", "br_netfilter",
	"sch_netem", "sch_prio", "cls_u32",
	"nfnetlink_queue", "xt_NFQUEUE", "xt_comment", "xt_physdev",
	"nf_tables", "nft_compat",
	"ip_tables", "iptable_mangle", "ip6_tables", "ip6table_mangle",
}

// module is one kernel module file and the modules it depends on.
type module struct {
	Name    string // as the kernel names it: dashes become underscores
	Path    string // the .ko, .ko.xz or .ko.zst file
	Depends []string
	Data    []byte // the ELF image, decompressed
}

// modName normalizes a module name the way the kernel does.
func modName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// indexModules maps module names to their files under dir
// (lib/modules/<version>).
func indexModules(dir string) (map[string]string, error) {
	idx := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := d.Name()
		for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
			if !d.IsDir() && strings.HasSuffix(base, ext) {
				idx[modName(strings.TrimSuffix(base, ext))] = p
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index kernel modules in %s: %w", dir, err)
	}
	return idx, nil
}

// builtinModules reads modules.builtin: the modules compiled into the
// kernel, which need no loading.
func builtinModules(dir string) map[string]bool {
	out := map[string]bool{}
	data, err := os.ReadFile(filepath.Join(dir, "modules.builtin"))
	if err != nil {
		return out
	}
	for _, l := range strings.Fields(string(data)) {
		out[modName(strings.TrimSuffix(filepath.Base(l), ".ko"))] = true
	}
	return out
}

// moduleOrder returns want and everything they depend on, each after its
// dependencies, from the modules under dir. It reads each module's
// depends= from its .modinfo section.
func moduleOrder(dir string, want []string) ([]module, error) {
	idx, err := indexModules(dir)
	if err != nil {
		return nil, err
	}
	builtin := builtinModules(dir)
	var out []module
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		name = modName(name)
		switch state[name] {
		case 1:
			return fmt.Errorf("module dependency cycle through %s", name)
		case 2:
			return nil
		}
		p, ok := idx[name]
		if !ok {
			if builtin[name] {
				state[name] = 2
				return nil
			}
			if from != "" {
				return fmt.Errorf("module %s (needed by %s) is not under %s", name, from, dir)
			}
			return fmt.Errorf("module %s is not under %s", name, dir)
		}
		state[name] = 1
		data, err := readModule(p)
		if err != nil {
			return err
		}
		deps, err := modinfoDepends(data)
		if err != nil {
			return fmt.Errorf("module %s: %w", name, err)
		}
		for _, d := range deps {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		state[name] = 2
		out = append(out, module{Name: name, Path: p, Depends: deps, Data: data})
		return nil
	}
	for _, w := range want {
		if err := visit(w, ""); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// modinfoDepends returns the depends= list of a module's .modinfo section
// (NUL-separated key=value strings).
func modinfoDepends(ko []byte) ([]string, error) {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil, fmt.Errorf("read ELF: %w", err)
	}
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("no .modinfo section")
	}
	info, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read .modinfo: %w", err)
	}
	for _, kv := range bytes.Split(info, []byte{0}) {
		v, ok := bytes.CutPrefix(kv, []byte("depends="))
		if !ok {
			continue
		}
		var deps []string
		for _, d := range strings.Split(string(v), ",") {
			if d != "" {
				deps = append(deps, modName(d))
			}
		}
		return deps, nil
	}
	return nil, nil
}

// readModule returns a module's ELF image. Compressed modules (.ko.xz,
// .ko.zst, .ko.gz: newer Debian kernels ship them) are decompressed with
// the host's xz, zstd or gzip, so that the guest loads a plain image
// whether or not its kernel decompresses modules itself.
func readModule(p string) ([]byte, error) {
	var tool string
	switch {
	case strings.HasSuffix(p, ".ko"):
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read module: %w", err)
		}
		return data, nil
	case strings.HasSuffix(p, ".xz"):
		tool = "xz"
	case strings.HasSuffix(p, ".zst"):
		tool = "zstd"
	case strings.HasSuffix(p, ".gz"):
		tool = "gzip"
	default:
		return nil, fmt.Errorf("module %s: unknown file kind", p)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tool, "-dc", p)
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("decompress module %s with %s: %w: %s", p, tool, err, strings.TrimSpace(stderr.String()))
	}
	return data, nil
}
