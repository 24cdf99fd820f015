package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

func fakeDoctorEnv() DoctorEnv {
	return DoctorEnv{
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
	cs := Doctor(ctx, e)
	if DoctorFailed(cs) {
		t.Fatalf("healthy host reported failing: %v", cs)
	}
	var netem DoctorCheck
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
	cs = Doctor(ctx, e)
	if !DoctorFailed(cs) || !strings.Contains(cs[1].String(), "run as root") {
		t.Fatalf("non-root: %v", cs[1])
	}
	e.CapEff = func() (uint64, error) { return 1 << capNetAdmin, nil }
	if cs = Doctor(ctx, e); DoctorFailed(cs) {
		t.Fatalf("CAP_NET_ADMIN should suffice: %v", cs)
	}

	// No engine.
	e = fakeDoctorEnv()
	e.Engine = func(context.Context) (engine.EngineInfo, error) { return engine.EngineInfo{}, engine.ErrNoEngine }
	cs = Doctor(ctx, e)
	if !DoctorFailed(cs) || !strings.HasPrefix(cs[0].String(), "FAIL") || !strings.Contains(cs[0].String(), "dockerd") {
		t.Fatalf("no engine: %s", cs[0])
	}

	// Neither shaper works → required failure.
	e = fakeDoctorEnv()
	e.NFQueue = func() error { return errors.New("iptables missing") }
	if cs = Doctor(ctx, e); !DoctorFailed(cs) {
		t.Fatal("no working shaper must fail")
	}

	// Without kernel netem and bridge netfilter the userspace shaper
	// cannot hold packets on the wire: one line names the fix, and the
	// backend line says there is no shaper.
	e = fakeDoctorEnv()
	e.BridgeNF = func() error {
		return errors.New("bridge netfilter is missing (no /proc/sys/net/bridge/bridge-nf-call-iptables): load it with `modprobe br_netfilter`")
	}
	cs = Doctor(ctx, e)
	if !DoctorFailed(cs) {
		t.Fatal("no bridge netfilter without kernel netem must fail")
	}
	var bn, be DoctorCheck
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
	if cs = Doctor(ctx, e); DoctorFailed(cs) || !strings.Contains(fmt.Sprint(cs), "kernel netem on each container's link") {
		t.Fatalf("kernel netem host: %v", cs)
	}
	if e = fakeDoctorEnv(); !strings.Contains(fmt.Sprint(Doctor(ctx, e)), "userspace NFQUEUE on the run's bridge (wire hook), because kernel netem is unusable: no such file") {
		t.Fatalf("userspace host: %v", Doctor(ctx, e))
	}

	// Low disk.
	e = fakeDoctorEnv()
	e.FreeBytes = func(string) (uint64, error) { return 1 << 30, nil }
	if cs = Doctor(ctx, e); !DoctorFailed(cs) {
		t.Fatal("1 GiB free must fail")
	}
}

// Library errors say what happened; what to run about it (make targets,
// rttlab commands, flags) is the command line's to add.
func TestLibraryErrorsAreFactual(t *testing.T) {
	cliWords := []string{"make ", "`", "rttlab ", "--", "sudo"}
	var errs []error
	errs = append(errs, engine.ErrNoEngine, engine.ErrEngineDenied, engine.ErrImageMissing, engine.ErrNoDebootstrap, engine.ErrNeedRoot, shaping.ErrAgentStopped)
	for _, s := range []string{"", ",", "0,abc"} {
		_, err := ParseDelaysMs(s)
		errs = append(errs, err)
	}
	p := &Plan{DelaysMs: []float64{0}, Runs: 1, Requests: 1}
	p.Defaults()
	errs = append(errs, p.Validate())
	for _, err := range errs {
		for _, w := range cliWords {
			if err == nil || strings.Contains(err.Error(), w) {
				t.Errorf("%q gives command-line advice (%q)", err, w)
			}
		}
	}
	// doctor's engine line says each thing once.
	e := fakeDoctorEnv()
	e.Engine = func(context.Context) (engine.EngineInfo, error) {
		return engine.EngineInfo{}, fmt.Errorf("%w (unix:///var/run/docker.sock: connection refused)", engine.ErrNoEngine)
	}
	line := Doctor(context.Background(), e)[0].String()
	if strings.Count(line, "DOCKER_HOST") != 1 || strings.Count(line, "dockerd") != 1 || strings.Contains(line, "make ") {
		t.Errorf("engine line repeats or gives command-line advice: %s", line)
	}
}

// Every field the load client reports about a request reaches the sample,
// the re-sent flag included.
func TestTaskSamplesKeepEverything(t *testing.T) {
	task := results.Task{ID: 7, App: "go", Route: "/feed", RTTms: 0.5, Run: 3}
	rs := []workloads.Result{
		{Seq: 0, Warmup: true, Path: "/feed", LatencyNS: 10, Status: 200, Bytes: 5},
		{Seq: 1, Path: "/feed", LatencyNS: 20, Status: 200, Bytes: 6, Retried: true},
		{Seq: 2, Path: "/feed", LatencyNS: 30, Status: 0, Error: "reset"},
	}
	got := taskSamples(task, 2, rs)
	want := []results.Sample{
		{Task: 7, Attempt: 2, App: "go", Route: "/feed", RTTms: 0.5, Run: 3, Seq: 0, Warmup: true, LatencyNS: 10, Status: 200, Bytes: 5},
		{Task: 7, Attempt: 2, App: "go", Route: "/feed", RTTms: 0.5, Run: 3, Seq: 1, LatencyNS: 20, Status: 200, Bytes: 6, Retried: true},
		{Task: 7, Attempt: 2, App: "go", Route: "/feed", RTTms: 0.5, Run: 3, Seq: 2, LatencyNS: 30, Error: "reset"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("samples\n got %+v\nwant %+v", got, want)
	}
}
