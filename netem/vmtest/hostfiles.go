package vmtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// hostFile is a file of the host that goes into the initramfs: a regular
// file (Data) or a symbolic link (Link).
type hostFile struct {
	Path string
	Mode uint32
	Data []byte
	Link string
}

// xtablesDirs are where Debian and others keep iptables' extensions.
var xtablesDirs = []string{"/usr/lib/x86_64-linux-gnu/xtables", "/usr/lib64/xtables", "/usr/lib/xtables"}

// iptablesFiles collects what the userspace shaper execs: iptables and
// ip6tables (links to the multi-call binary they resolve to, nft or
// legacy as the host chose), the extension modules they load, and every
// shared library those need (from ldd), each at the path the host has it.
func iptablesFiles() ([]hostFile, error) {
	var files []hostFile
	var elfs []string
	for _, name := range []string{"iptables", "ip6tables"} {
		p, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("%s not found on the host (install the iptables package): %w", name, err)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", p, err)
		}
		files = append(files, hostFile{Path: "/usr/sbin/" + name, Link: real})
		if !slices.Contains(elfs, real) {
			elfs = append(elfs, real)
		}
	}
	var extDir string
	for _, d := range xtablesDirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			extDir = d
			break
		}
	}
	if extDir == "" {
		return nil, fmt.Errorf("no iptables extension folder on the host (looked in %s)", strings.Join(xtablesDirs, ", "))
	}
	exts, err := filepath.Glob(filepath.Join(extDir, "*.so"))
	if err != nil || len(exts) == 0 {
		return nil, fmt.Errorf("no iptables extensions in %s", extDir)
	}
	elfs = append(elfs, exts...)
	libs, err := lddLibraries(elfs)
	if err != nil {
		return nil, err
	}
	for _, p := range append(elfs, libs...) {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		files = append(files, hostFile{Path: p, Mode: 0o755, Data: data})
	}
	// The loader's cache, so that libraries are found as on the host.
	if data, err := os.ReadFile("/etc/ld.so.cache"); err == nil {
		files = append(files, hostFile{Path: "/etc/ld.so.cache", Mode: 0o644, Data: data})
	}
	return files, nil
}

// lddLibraries lists the shared libraries (the loader included) that ldd
// names for the given ELF files, without repeats.
func lddLibraries(elfs []string) ([]string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("ldd", elfs...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ldd of iptables and its extensions: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	libs, missing := parseLdd(out)
	if len(missing) > 0 {
		return nil, fmt.Errorf("ldd: the host lacks %s, needed by iptables or its extensions", strings.Join(missing, ", "))
	}
	return libs, nil
}

// parseLdd reads ldd's output: "libx.so.1 => /path (0x...)" and the
// loader's "/lib64/ld-linux-x86-64.so.2 (0x...)" lines; "name:" headers
// and the vDSO are skipped; "libx.so.1 => not found" goes to missing.
func parseLdd(out []byte) (libs, missing []string) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var p string
		switch {
		case len(f) >= 4 && f[1] == "=>" && f[2] == "not" && f[3] == "found":
			if !slices.Contains(missing, f[0]) {
				missing = append(missing, f[0])
			}
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			p = f[2]
		case len(f) == 2 && strings.HasPrefix(f[0], "/") && strings.HasPrefix(f[1], "(0x"):
			p = f[0]
		}
		if p != "" && !slices.Contains(libs, p) {
			libs = append(libs, p)
		}
	}
	return libs, missing
}
