package vmtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// guestEnvKey is set on the kernel command line; the kernel hands
// "key=value" words it does not know to /init as environment, and the
// test binary runs as the guest only when it is PID 1 and sees it.
const guestEnvKey = "rttlab_vmtest"

// guestBackendsKey, on the kernel command line, limits the guest to the
// kernel backend ("kernel"): the userspace shaper's checks exec iptables,
// which the initramfs holds only when it is the host's own architecture.
const guestBackendsKey = "rttlab_backends"

// vmArch is one architecture the VM test boots: qemu's binary and
// arguments, the Go architecture of the guest's /init, the environment
// variables .ci/vm.sh hands the unpacked kernel over in, and whether the
// host's iptables (same architecture) go into the initramfs.
type vmArch struct {
	name     string
	goarch   string
	qemu     string
	pkg      string // qemu's Debian package, for the error
	dirEnv   string // the unpacked kernel's folder
	errEnv   string // why .ci/vm.sh could not prepare it
	vmArgs   []string
	console  string
	iptables bool
	// extra goes on the kernel command line.
	extra string
}

// Both use software emulation (this host's KVM cannot run a stock
// kernel), 2 CPUs, 512 MiB, no network card, the serial port as the
// console on stdio, and no reboot, so that the guest's power-off (or a
// panic, with panic=-1) ends qemu.
var (
	// amd64: qemu's most capable CPU; the guest trusts its TSC (else it
	// picks the HPET, whose every clock read traps into the emulator).
	archAMD64 = vmArch{name: "amd64", goarch: "amd64", qemu: "qemu-system-x86_64", pkg: "qemu-system-x86",
		dirEnv: "RTTLAB_VM_KERNEL_DIR", errEnv: "RTTLAB_VM_ERROR", vmArgs: []string{"-accel", "tcg", "-cpu", "max"},
		console: "ttyS0", iptables: true, extra: "mitigations=off clocksource=tsc tsc=reliable"}
	// arm64: qemu's virt board with its most capable CPU less pointer
	// authentication, whose emulation alone costs 4 s of the boot. The
	// kernel backend only (see guestBackendsKey).
	archARM64 = vmArch{name: "arm64", goarch: "arm64", qemu: "qemu-system-aarch64", pkg: "qemu-system-arm",
		dirEnv: "RTTLAB_VM_KERNEL_DIR_ARM64", errEnv: "RTTLAB_VM_ERROR_ARM64", vmArgs: []string{"-M", "virt", "-accel", "tcg", "-cpu", "max,pauth=off"},
		console: "ttyAMA0", extra: "mitigations=off " + guestBackendsKey + "=kernel"}
)

// qemuArgs are qemu's arguments for arch.
func qemuArgs(arch vmArch, kernel, initrd string) []string {
	return append(append([]string(nil), arch.vmArgs...),
		"-m", "512", "-smp", "2",
		"-kernel", kernel, "-initrd", initrd,
		"-nographic", "-no-reboot", "-nic", "none",
		"-append", "console="+arch.console+" panic=-1 quiet loglevel=3 "+arch.extra+" "+guestEnvKey+"=1",
	)
}

// runQEMU boots arch's kernel with initrd and copies the console to console
// until qemu exits or ctx ends (then qemu is killed). It returns how
// long qemu ran.
func runQEMU(ctx context.Context, arch vmArch, kernel, initrd string, console io.Writer) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, arch.qemu, qemuArgs(arch, kernel, initrd)...)
	cmd.Stdout, cmd.Stderr = console, console
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		return took, fmt.Errorf("qemu killed after %v: %w", took.Round(time.Second), ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return took, fmt.Errorf("qemu exited with status %d", ee.ExitCode())
	}
	if err != nil {
		return took, fmt.Errorf("run qemu: %w", err)
	}
	return took, nil
}
