package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
)

func fakeDoctorEnv() engine.DoctorEnv {
	return engine.DoctorEnv{
		Engine: func(context.Context) (engine.EngineInfo, error) {
			return engine.EngineInfo{Version: "20.10.24", APIVersion: "1.41", OS: "linux", Arch: "amd64", Kernel: "6.1"}, nil
		},
		ImageID:      func(context.Context, string) (string, error) { return "sha256:0123456789abcdef", nil },
		Euid:         func() int { return 0 },
		CapEff:       func() (uint64, error) { return 0, nil },
		KernelNetem:  func() error { return errors.New("no such file or directory: Specified qdisc kind is unknown") },
		NFQueue:      func() error { return nil },
		BridgeNF:     func() error { return nil },
		LookPath:     func(s string) (string, error) { return "/usr/sbin/" + s, nil },
		FreeBytes:    func(string) (uint64, error) { return 50 << 30, nil },
		DockerRoot:   "/var/lib/docker",
		MinFreeBytes: 10 << 30,
	}
}

func TestDoctorChecks(t *testing.T) {
	ctx := context.Background()
	e := fakeDoctorEnv()
	cs := engine.Doctor(ctx, e)
	if engine.DoctorFailed(cs) {
		t.Fatalf("healthy host reported failing: %v", cs)
	}
	var netem engine.DoctorCheck
	for _, c := range cs {
		if c.Name == "kernel netem" {
			netem = c
		}
	}
	if netem.OK || !strings.Contains(netem.String(), "Specified qdisc kind is unknown") || !strings.HasPrefix(netem.String(), "WARN") {
		t.Fatalf("netem line should warn with the kernel's words: %s", netem)
	}

	// Not root, no CAP_NET_ADMIN → required failure naming the fix.
	e.Euid = func() int { return 1000 }
	cs = engine.Doctor(ctx, e)
	if !engine.DoctorFailed(cs) || !strings.Contains(cs[1].String(), "run as root") {
		t.Fatalf("non-root: %v", cs[1])
	}
	e.CapEff = func() (uint64, error) { return 1 << engine.CapNetAdmin, nil }
	if cs = engine.Doctor(ctx, e); engine.DoctorFailed(cs) {
		t.Fatalf("CAP_NET_ADMIN should suffice: %v", cs)
	}

	// No engine.
	e = fakeDoctorEnv()
	e.Engine = func(context.Context) (engine.EngineInfo, error) { return engine.EngineInfo{}, engine.ErrNoEngine }
	cs = engine.Doctor(ctx, e)
	if !engine.DoctorFailed(cs) || !strings.HasPrefix(cs[0].String(), "FAIL") || !strings.Contains(cs[0].String(), "dockerd") {
		t.Fatalf("no engine: %s", cs[0])
	}

	// Neither shaper works → required failure.
	e = fakeDoctorEnv()
	e.NFQueue = func() error { return errors.New("iptables missing") }
	if cs = engine.Doctor(ctx, e); !engine.DoctorFailed(cs) {
		t.Fatal("no working shaper must fail")
	}

	// Without kernel netem and bridge netfilter the userspace shaper
	// cannot hold packets on the wire: one line names the fix, and the
	// backend line says there is no shaper.
	e = fakeDoctorEnv()
	e.BridgeNF = func() error {
		return errors.New("bridge netfilter is missing (no /proc/sys/net/bridge/bridge-nf-call-iptables): load it with `modprobe br_netfilter`")
	}
	cs = engine.Doctor(ctx, e)
	if !engine.DoctorFailed(cs) {
		t.Fatal("no bridge netfilter without kernel netem must fail")
	}
	var bn, be engine.DoctorCheck
	for _, c := range cs {
		switch c.Name {
		case "bridge netfilter":
			bn = c
		case "shaper (auto)":
			be = c
		}
	}
	if !strings.HasPrefix(bn.String(), "FAIL") || !strings.Contains(bn.String(), "modprobe br_netfilter") || !strings.Contains(be.String(), "none: kernel netem is unusable") {
		t.Fatalf("bridge netfilter %s; backend %s", bn, be)
	}
	// With kernel netem it does not matter, and the backend is kernel.
	e.KernelNetem = func() error { return nil }
	if cs = engine.Doctor(ctx, e); engine.DoctorFailed(cs) || !strings.Contains(fmt.Sprint(cs), "kernel netem on each container's link") {
		t.Fatalf("kernel netem host: %v", cs)
	}
	if e = fakeDoctorEnv(); !strings.Contains(fmt.Sprint(engine.Doctor(ctx, e)), "userspace NFQUEUE on the run's bridge (wire hook), because kernel netem is unusable: no such file") {
		t.Fatalf("userspace host: %v", engine.Doctor(ctx, e))
	}

	// Emulation of the other platform: a warning naming the fix, or the
	// line that says --platform works.
	e = fakeDoctorEnv()
	e.Emulation = func(engine.Platform) error {
		return errors.New("platform linux/arm64: no qemu-aarch64 handler: install qemu-user-static")
	}
	cs = engine.Doctor(ctx, e)
	last := cs[len(cs)-1]
	if engine.DoctorFailed(cs) || last.Name != "platform linux/arm64" || !strings.HasPrefix(last.String(), "WARN") || !strings.HasSuffix(last.String(), "fix: install qemu-user-static") {
		t.Fatalf("no emulation: %v", last)
	}
	e.Emulation = func(engine.Platform) error { return nil }
	if cs = engine.Doctor(ctx, e); !strings.HasPrefix(cs[len(cs)-1].String(), "OK   platform linux/arm64   runs under qemu-user emulation (binfmt_misc qemu-aarch64)") {
		t.Fatalf("emulation: %v", cs[len(cs)-1])
	}

	// Low disk.
	e = fakeDoctorEnv()
	e.FreeBytes = func(string) (uint64, error) { return 1 << 30, nil }
	if cs = engine.Doctor(ctx, e); !engine.DoctorFailed(cs) {
		t.Fatal("1 GiB free must fail")
	}
}

// The host's doctor environment asks the engine it is given, or answers
// with the error that connecting gave.
func TestHostDoctorEnv(t *testing.T) {
	ctx := context.Background()
	e := engine.HostDoctorEnv(nil, engine.ErrNoEngine)
	if _, err := e.Engine(ctx); !errors.Is(err, engine.ErrNoEngine) {
		t.Errorf("engine: %v", err)
	}
	if _, err := e.ImageID(ctx, engine.BaseImage); !errors.Is(err, engine.ErrNoEngine) {
		t.Errorf("image: %v", err)
	}
	fd := enginefake.New()
	e = engine.HostDoctorEnv(fd, nil)
	if info, err := e.Engine(ctx); err != nil || info.Version != fd.Info.Version {
		t.Errorf("engine: %+v %v", info, err)
	}
	if free, err := e.FreeBytes("/nonexistent/deeper"); err != nil || free == 0 {
		t.Errorf("free bytes above a missing folder: %d %v", free, err)
	}
	if _, err := e.CapEff(); err != nil {
		t.Errorf("CapEff: %v", err)
	}
	for in, want := range map[string]string{"/a/b": "/a", "/a/b/": "/a", "/a": "/", "/": "/"} {
		if got := engine.ParentDir(in); got != want {
			t.Errorf("parentDir(%q) = %q, want %q", in, got, want)
		}
	}
}

// doctor's engine line says each thing once, and gives no command-line
// advice of the Makefile's.
func TestDoctorEngineLine(t *testing.T) {
	e := fakeDoctorEnv()
	e.Engine = func(context.Context) (engine.EngineInfo, error) {
		return engine.EngineInfo{}, fmt.Errorf("%w (unix:///var/run/docker.sock: connection refused)", engine.ErrNoEngine)
	}
	line := engine.Doctor(context.Background(), e)[0].String()
	if strings.Count(line, "DOCKER_HOST") != 1 || strings.Count(line, "dockerd") != 1 || strings.Contains(line, "make ") {
		t.Errorf("engine line repeats or gives command-line advice: %s", line)
	}
}
