package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/vishvananda/netns"

	"golang.org/x/sys/unix"

	"github.com/rttlab/rttlab/netem"
	labrt "github.com/rttlab/rttlab/orchestrator/runtime"
)

// DoctorCheck is one line of doctor's report (runtime.Check: every
// runtime's doctor speaks the same lines).
type DoctorCheck = labrt.Check

// DoctorEnv is what the checks look at; the functions are replaceable in
// unit tests.
type DoctorEnv struct {
	Engine       func(ctx context.Context) (EngineInfo, error)
	ImageID      func(ctx context.Context, ref string) (string, error)
	Euid         func() int
	CapEff       func() (uint64, error)
	KernelNetem  func() error
	NFQueue      func() error
	BridgeNF     func() error
	LookPath     func(string) (string, error)
	FreeBytes    func(path string) (uint64, error)
	DockerRoot   string
	MinFreeBytes uint64
	// Emulation says whether the host runs a foreign platform's
	// containers (CheckEmulation); nil: the check is left out.
	Emulation func(Platform) error
}

// HostDoctorEnv returns the real environment; d may be nil when no engine
// answers (the engine check then fails with connErr).
func HostDoctorEnv(d Docker, connErr error) DoctorEnv {
	env := DoctorEnv{
		Euid:         os.Geteuid,
		CapEff:       capEff,
		KernelNetem:  ProbeKernelNetem,
		NFQueue:      ProbeNFQueue,
		BridgeNF:     netem.BridgeNetfilter,
		LookPath:     exec.LookPath,
		FreeBytes:    freeBytes,
		DockerRoot:   "/var/lib/docker",
		MinFreeBytes: 10 << 30,
		Emulation:    CheckEmulation,
	}
	if d != nil {
		env.Engine = d.EngineInfo
		env.ImageID = d.ImageID
	} else {
		env.Engine = func(context.Context) (EngineInfo, error) { return EngineInfo{}, connErr }
		env.ImageID = func(context.Context, string) (string, error) { return "", connErr }
	}
	return env
}

const capNetAdmin = 12

// Doctor runs every check.
func Doctor(ctx context.Context, e DoctorEnv) []DoctorCheck {
	var out []DoctorCheck
	info, err := e.Engine(ctx)
	engineOK := err == nil
	out = append(out, engineCheck(info, err))
	if engineOK && info.Root != "" {
		e.DockerRoot = info.Root
	}
	out = append(out, e.privilegesCheck())
	kn, nq, bn := e.shaperChecks()
	out = append(out, kn, nq, bn, backendCheck(kn, nq, bn))
	out = append(out, e.debootstrapCheck())
	out = append(out, e.baseImageCheck(ctx, engineOK))
	out = append(out, e.diskCheck())
	if engineOK && e.Emulation != nil {
		out = append(out, e.emulationChecks(info)...)
	}
	return out
}

// emulationChecks say, per platform rttlab supports other than the
// engine's own, whether --platform can run it here (under qemu-user);
// never required.
func (e DoctorEnv) emulationChecks(info EngineInfo) []DoctorCheck {
	var out []DoctorCheck
	for _, s := range Platforms {
		p, _ := ParsePlatform(s)
		p, err := p.On(info)
		if err != nil || !p.Foreign() {
			continue
		}
		c := DoctorCheck{Name: "platform " + s}
		if err := e.Emulation(p); err != nil {
			c.Detail, c.Fix = "cannot run here (--platform "+s+")", strings.TrimPrefix(err.Error()[strings.LastIndex(err.Error(), ": ")+2:], " ")
		} else {
			c.OK, c.Detail = true, "runs under qemu-user emulation (binfmt_misc qemu-"+qemuNames[p.Arch]+"): --platform "+s+" works, its timings make no claim"
		}
		out = append(out, c)
	}
	return out
}

// engineCheck says whether the engine answered, and what it is.
func engineCheck(info EngineInfo, err error) DoctorCheck {
	if err == nil {
		return DoctorCheck{Name: "docker engine", OK: true, Required: true,
			Detail: fmt.Sprintf("engine %s, API %s, %s/%s, kernel %s", info.Version, info.APIVersion, info.OS, info.Arch, info.Kernel)}
	}
	return DoctorCheck{Name: "docker engine", Required: true, Detail: FirstLine(err.Error()),
		Fix: "start dockerd, or set DOCKER_HOST to a running engine"}
}

// privilegesCheck says whether rttlab runs as root or holds
// CAP_NET_ADMIN.
func (e DoctorEnv) privilegesCheck() DoctorCheck {
	priv := DoctorCheck{Name: "privileges", Required: true}
	if e.Euid() == 0 {
		priv.OK, priv.Detail = true, "running as root"
	} else if caps, err := e.CapEff(); err == nil && caps&(1<<capNetAdmin) != 0 {
		priv.OK, priv.Detail = true, "CAP_NET_ADMIN held"
	} else {
		priv.Detail = "not root and no CAP_NET_ADMIN"
		priv.Fix = "run as root (sudo rttlab ...)"
	}
	return priv
}

// shaperChecks tries kernel netem, NFQUEUE and bridge netfilter, in that
// order. One of the two shapers is required: kernel netem, or the
// userspace shaper on the wire (NFQUEUE and bridge netfilter).
func (e DoctorEnv) shaperChecks() (kn, nq, bn DoctorCheck) {
	kn = probeCheck("kernel netem", e.KernelNetem, "sch_netem works (tested in a throwaway netns)",
		"none needed: the userspace NFQUEUE shaper is used (--shaper auto)")
	nq = probeCheck("NFQUEUE", e.NFQueue, "iptables NFQUEUE target accepted (throwaway netns)",
		"install iptables (apt-get install -y iptables) and load xt_NFQUEUE / nfnetlink_queue")
	bn = probeCheck("bridge netfilter", e.BridgeNF, "bridged packets pass iptables: the userspace shaper can hold them on a run's bridge",
		"modprobe br_netfilter && sysctl -w net.bridge.bridge-nf-call-iptables=1 (needed only without kernel netem)")
	if !kn.OK {
		nq.Required, bn.Required = true, true
	}
	return kn, nq, bn
}

// probeCheck is the check name, passed with detail ok when probe succeeds,
// else unusable (probe's error) with fix.
func probeCheck(name string, probe func() error, ok, fix string) DoctorCheck {
	c := DoctorCheck{Name: name}
	if err := probe(); err == nil {
		c.OK, c.Detail = true, ok
	} else {
		c.Detail = "unusable: " + err.Error()
		c.Fix = fix
	}
	return c
}

// debootstrapCheck says whether debootstrap, which builds the base image,
// is installed.
func (e DoctorEnv) debootstrapCheck() DoctorCheck {
	db := DoctorCheck{Name: "debootstrap"}
	if p, err := e.LookPath("debootstrap"); err == nil {
		db.OK, db.Detail = true, p
	} else {
		db.Detail = "not installed (needed only to build the base image)"
		db.Fix = "apt-get install -y debootstrap"
	}
	return db
}

// baseImageCheck says whether the engine holds the base image.
func (e DoctorEnv) baseImageCheck(ctx context.Context, engineOK bool) DoctorCheck {
	bi := DoctorCheck{Name: "base image"}
	if !engineOK {
		bi.Detail = "unknown (no engine)"
	} else if id, err := e.ImageID(ctx, BaseImage); err == nil {
		bi.OK, bi.Detail = true, BaseImage+" "+strings.TrimPrefix(id, "sha256:")[:12]
	} else {
		bi.Detail = BaseImage + " missing"
		bi.Fix = "rttlab images base"
	}
	return bi
}

// diskCheck says whether the engine's root has MinFreeBytes free.
func (e DoctorEnv) diskCheck() DoctorCheck {
	disk := DoctorCheck{Name: "free disk", Required: true}
	if free, err := e.FreeBytes(e.DockerRoot); err != nil {
		disk.Detail = err.Error()
		disk.OK = false
		disk.Required = false
	} else {
		disk.Detail = fmt.Sprintf("%.1f GiB free at %s", float64(free)/(1<<30), e.DockerRoot)
		disk.OK = free >= e.MinFreeBytes
		if !disk.OK {
			disk.Fix = fmt.Sprintf("free at least %.0f GiB (images and build cache need it; `rttlab clean --images` removes rttlab's)", float64(e.MinFreeBytes)/(1<<30))
		}
	}
	return disk
}

// backendCheck says which shaper --shaper auto gets on this host.
func backendCheck(kn, nq, bn DoctorCheck) DoctorCheck {
	c := DoctorCheck{Name: "shaper (auto)", OK: true}
	switch {
	case kn.OK:
		c.Detail = "kernel netem on each container's link"
	case nq.OK && bn.OK:
		c.Detail = "userspace NFQUEUE on the run's bridge (wire hook), because kernel netem is " + kn.Detail
	default:
		c.OK, c.Required = false, true
		c.Detail = "none: kernel netem is " + kn.Detail
		c.Fix = "see the NFQUEUE and bridge netfilter lines"
	}
	return c
}

// DoctorFailed reports whether a required check failed.
func DoctorFailed(cs []DoctorCheck) bool {
	for _, c := range cs {
		if c.Required && !c.OK {
			return true
		}
	}
	return false
}

func capEff() (uint64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("CapEff not found in /proc/self/status")
}

func freeBytes(path string) (uint64, error) {
	for p := path; p != ""; {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err == nil {
			return st.Bavail * uint64(st.Bsize), nil
		}
		if p == "/" {
			break
		}
		p = parentDir(p)
	}
	return 0, fmt.Errorf("statfs %s failed", path)
}

func parentDir(p string) string {
	i := strings.LastIndexByte(strings.TrimRight(p, "/"), '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// inThrowawayNetns runs fn on a locked OS thread inside a new, empty
// network namespace, then returns the thread to the original one. Child
// processes started by fn inherit the new namespace.
func inThrowawayNetns(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is not unlocked: if restoring the namespace failed
		// the runtime discards it when the goroutine exits.
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("get netns: %w", err)
			return
		}
		defer orig.Close()
		ns, err := netns.New()
		if err != nil {
			errc <- fmt.Errorf("new netns (needs root): %w", err)
			return
		}
		ferr := fn()
		ns.Close()
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("restore netns: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// ProbeKernelNetem adds a netem qdisc to lo in a throwaway netns and
// returns the kernel's own words when that fails.
func ProbeKernelNetem() error {
	return inThrowawayNetns(netem.ProbeKernel)
}

// ProbeNFQueue adds an NFQUEUE rule in a throwaway netns.
func ProbeNFQueue() error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return errors.New("iptables is not installed")
	}
	return inThrowawayNetns(func() error {
		out, err := exec.Command("iptables", "-w", "-t", "mangle", "-A", "POSTROUTING", "-j", "NFQUEUE", "--queue-num", "4242").CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables NFQUEUE rule: %s", strings.TrimSpace(string(out)))
		}
		return nil
	})
}

// CPUModel is the host's CPU model name as /proc/cpuinfo gives it, ""
// where it gives none; the studies record it in their manifests.
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// CPUIdle says how this host's CPUs idle: the cpuidle driver and
// governor ("none" where the kernel has no cpuidle), which decide how
// long a waiting process takes to wake up; "" where it cannot be read.
func CPUIdle() string {
	read := func(name string) string {
		b, err := os.ReadFile("/sys/devices/system/cpu/cpuidle/" + name)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	driver, governor := read("current_driver"), read("current_governor")
	switch {
	case driver == "":
		return ""
	case governor == "":
		return "cpuidle " + driver
	}
	return "cpuidle " + driver + ", governor " + governor
}

// LoadAverage is the host's 1-minute load average, -1 where it cannot be
// read.
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
