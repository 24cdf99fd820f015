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

// qemuArgs are qemu's arguments: software emulation (this host's KVM
// cannot run a stock kernel) of qemu's most capable CPU, 2 CPUs, 512 MiB,
// no network card, the serial port as the console on stdio, and no
// reboot, so that the guest's power-off (or a panic, with panic=-1) ends
// qemu. The guest trusts its TSC (else it picks the HPET, whose every
// clock read traps into the emulator).
func qemuArgs(kernel, initrd string) []string {
	return []string{
		"-accel", "tcg", "-cpu", "max",
		"-m", "512", "-smp", "2",
		"-kernel", kernel, "-initrd", initrd,
		"-nographic", "-no-reboot", "-nic", "none",
		"-append", "console=ttyS0 panic=-1 quiet loglevel=3 mitigations=off clocksource=tsc tsc=reliable " + guestEnvKey + "=1",
	}
}

// runQEMU boots kernel with initrd and copies the console to console
// until qemu exits or ctx ends (then qemu is killed). It returns how
// long qemu ran.
func runQEMU(ctx context.Context, kernel, initrd string, console io.Writer) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", qemuArgs(kernel, initrd)...)
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
