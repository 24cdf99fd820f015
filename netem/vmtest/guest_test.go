package vmtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// guestDeadline bounds the whole guest run; the host kills qemu a little
// later.
const guestDeadline = 150 * time.Second

// guestMain is the VM's /init: it mounts the kernel's file systems,
// loads the modules, builds the topology, runs every backend's checks,
// prints the summary and powers off. It never returns.
func guestMain() {
	r := &reporter{}
	go func() {
		time.Sleep(guestDeadline)
		fmt.Println(guestLine("summary", fmt.Sprintf("FAIL the guest ran past %v; %s", guestDeadline, r.counts())))
		powerOff()
	}()
	func() {
		defer func() {
			if p := recover(); p != nil {
				r.check("guest/panic", false, fmt.Sprintf("%v: %s", p, debug.Stack()))
			}
		}()
		guestRun(r)
	}()
	fmt.Println(guestLine("summary", verdict(r.failed == 0)+" "+r.counts()))
	powerOff()
}

func guestRun(r *reporter) {
	if err := guestSetup(r); err != nil {
		r.check("guest/setup", false, err.Error())
		return
	}
	r.check("guest/setup", true, "file systems mounted, modules loaded")
	topo, err := newTopology()
	if err != nil {
		r.check("guest/topology", false, err.Error())
		return
	}
	r.check("guest/topology", true, topo.String())
	for _, b := range backendsUnderTest(topo) {
		runSuite(r, topo, b)
	}
}

// reporter prints check results and counts them.
type reporter struct{ passed, failed int }

func (r *reporter) check(name string, pass bool, detail string) {
	if pass {
		r.passed++
	} else {
		r.failed++
	}
	fmt.Println(checkLine(name, pass, detail))
}

func (r *reporter) log(format string, args ...any) {
	fmt.Println(guestLine("log", fmt.Sprintf(format, args...)))
}

func (r *reporter) counts() string { return fmt.Sprintf("passed=%d failed=%d", r.passed, r.failed) }

// guestSetup mounts proc, sys, devtmpfs and tmpfs, reports the kernel,
// loads the modules in order and turns on the bridge's netfilter hooks.
func guestSetup(r *reporter) error {
	for _, m := range []struct{ src, dst, fs string }{
		{"proc", "/proc", "proc"},
		{"sysfs", "/sys", "sysfs"},
		{"devtmpfs", "/dev", "devtmpfs"},
		{"tmpfs", "/run", "tmpfs"},
		{"tmpfs", "/tmp", "tmpfs"},
	} {
		if err := unix.Mount(m.src, m.dst, m.fs, 0, ""); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fs, m.dst, err)
		}
	}
	if err := os.MkdirAll("/run/netns", 0o755); err != nil {
		return fmt.Errorf("create /run/netns: %w", err)
	}
	os.Setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	fmt.Println(guestLine("uname", unix.ByteSliceToString(u.Release[:])+" "+unix.ByteSliceToString(u.Version[:])))
	if up, err := os.ReadFile("/proc/uptime"); err == nil {
		r.log("/init started %s s after the kernel", strings.Fields(string(up))[0])
	}
	if cs, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil {
		r.log("clocksource %s", strings.TrimSpace(string(cs)))
	}
	start := time.Now()
	n, err := loadModules()
	if err != nil {
		return err
	}
	r.log("loaded %d modules in %v", n, time.Since(start).Round(time.Millisecond))
	for _, s := range []string{"net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables"} {
		if err := os.WriteFile("/proc/sys/"+s, []byte("1"), 0o644); err != nil {
			return fmt.Errorf("sysctl %s=1: %w", strings.ReplaceAll(s, "/", "."), err)
		}
	}
	return nil
}

// loadModules loads the initramfs' modules in the host's order with
// finit_module; one already there (or built in) is fine.
func loadModules() (int, error) {
	order, err := os.ReadFile(guestModOrder)
	if err != nil {
		return 0, fmt.Errorf("read module order: %w", err)
	}
	n := 0
	for _, name := range strings.Fields(string(order)) {
		p := filepath.Join(guestModDir, name+".ko")
		f, err := os.Open(p)
		if err != nil {
			return n, fmt.Errorf("open module: %w", err)
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return n, fmt.Errorf("load module %s: %w%s", name, err, dmesgTail())
		}
		n++
	}
	return n, nil
}

// dmesgTail is the kernel log's last lines, for a module that failed to
// load.
func dmesgTail() string {
	buf := make([]byte, 1<<16)
	n, err := unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
	if err != nil || n <= 0 {
		return ""
	}
	lines := bytes.Split(bytes.TrimSpace(buf[:n]), []byte("\n"))
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return " (kernel: " + string(bytes.Join(lines, []byte(" | "))) + ")"
}

// powerOff ends the VM. Should the power-off fail, a restart ends qemu
// too (it runs with -no-reboot).
func powerOff() {
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
	select {}
}
