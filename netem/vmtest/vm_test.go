package vmtest

import (
	"bytes"
	"context"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// vmTimeout bounds qemu's run (boot to power-off), past the guest's own
// deadline.
const vmTimeout = guestDeadline + 20*time.Second

// TestNetemInVM boots Debian's stock kernel (which has sch_netem) under
// qemu with this package's test binary as /init, and reports each of the
// guest's checks as a subtest: the kernel backend and the userspace
// shaper, each through set, read-back, in-place change, per-peer delays,
// floor, refusals and clear, seen by kernel-stamped pings, TCP
// request/response and numbered UDP streams.
func TestNetemInVM(t *testing.T) { runVMTest(t, archAMD64) }

// TestNetemInVMArm64 is TestNetemInVM on Debian's arm64 kernel under
// qemu-system-aarch64 (a DGX's Grace, an arm64 CI runner), for the kernel
// backend: the userspace shaper's checks need iptables of the guest's
// architecture, which this host does not have.
func TestNetemInVMArm64(t *testing.T) { runVMTest(t, archARM64) }

func runVMTest(t *testing.T, arch vmArch) {
	if testing.Short() {
		t.Skip("boots a VM: skipped with -short")
	}
	if os.Getenv("RTTLAB_INTEGRATION") == "" {
		t.Skip("boots Debian's kernel under qemu: runs under make test (RTTLAB_INTEGRATION=1)")
	}
	start := time.Now()
	kdir := vmKernelDir(t, arch)
	if _, err := exec.LookPath(arch.qemu); err != nil {
		t.Fatalf("%s not found (.ci/vm.sh installs %s): %v", arch.qemu, arch.pkg, err)
	}
	vmlinuz, modDir := kernelFiles(t, kdir)
	tmp := t.TempDir()
	initBin := buildGuest(t, filepath.Join(tmp, "init"), arch.goarch)
	mods, err := moduleOrder(modDir, guestModules)
	if err != nil {
		t.Fatalf("kernel modules: %v", err)
	}
	var files []hostFile
	if arch.iptables {
		if files, err = iptablesFiles(); err != nil {
			t.Fatalf("iptables for the userspace shaper: %v", err)
		}
	}
	initrd := filepath.Join(tmp, "initrd.gz")
	if err := writeInitramfs(initrd, initBin, mods, files); err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(mods))
	for i, m := range mods {
		names[i] = m.Name
	}
	st, _ := os.Stat(initrd)
	t.Logf("kernel %s; initramfs %.1f MB with %d modules (%s) and %d host files; prepared in %v",
		vmlinuz, float64(st.Size())/1e6, len(mods), strings.Join(names, " "), len(files), time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	pr, pw := io.Pipe()
	var took time.Duration
	var qerr error
	done := make(chan struct{})
	go func() {
		took, qerr = runQEMU(ctx, arch, vmlinuz, initrd, pw)
		pw.Close()
		close(done)
	}()
	res, rerr := readConsole(pr, func(kind, text string) {
		switch kind {
		case "uname":
			t.Logf("VM kernel: %s", text)
		case "log":
			t.Log(text)
		case "check":
			t.Logf("check %s", text)
		}
	})
	<-done
	t.Logf("qemu boot to power-off: %v; whole test: %v", took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if rerr != nil {
		t.Error(rerr)
	}
	for _, c := range res.Checks {
		t.Run(c.Name, func(t *testing.T) {
			if !c.Pass {
				t.Error(c.Detail)
			}
		})
	}
	if !res.HaveSummary {
		t.Fatalf("the guest printed no summary (%v); console tail:\n%s", qerr, strings.Join(res.Tail, "\n"))
	}
	if qerr != nil {
		t.Errorf("after the summary: %v", qerr)
	}
	if !res.SummaryPass {
		t.Errorf("guest summary: FAIL %s", res.Summary)
	}
}

// vmKernelDir is arch's unpacked kernel package: from .ci/vm.sh, which
// make test runs the tests under, or else run here.
func vmKernelDir(t *testing.T, arch vmArch) string {
	if msg := os.Getenv(arch.errEnv); msg != "" {
		t.Fatalf("VM set-up (.ci/vm.sh): %s", msg)
	}
	if d := os.Getenv(arch.dirEnv); d != "" {
		return d
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join("..", "..", ".ci", "vm.sh"), "--print", arch.name)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		t.Fatalf("VM set-up (.ci/vm.sh): %v: %s", err, lines[len(lines)-1])
	}
	return strings.TrimSpace(stdout.String())
}

// kernelFiles finds boot/vmlinuz-<version> and lib/modules/<version>.
func kernelFiles(t *testing.T, dir string) (vmlinuz, modDir string) {
	m, _ := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	if len(m) != 1 {
		t.Fatalf("%s: want one boot/vmlinuz-*, found %d", dir, len(m))
	}
	ver := strings.TrimPrefix(filepath.Base(m[0]), "vmlinuz-")
	modDir = filepath.Join(dir, "lib", "modules", ver)
	if _, err := os.Stat(modDir); err != nil {
		t.Fatalf("kernel modules: %v", err)
	}
	return m[0], modDir
}

// buildGuest builds this package's test binary for goarch, static
// (CGO_ENABLED=0), to run as the VM's /init, and returns it.
func buildGuest(t *testing.T, out, goarch string) []byte {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not found to build the VM's /init: %v", err)
	}
	cmd := exec.Command(goBin, "test", "-c", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the VM's /init: %v: %s", err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatalf("the VM's /init: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("the VM's /init is not static: it asks for a loader")
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
