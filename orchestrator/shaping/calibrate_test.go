package shaping

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/workloads"
)

// simShaper answers the agents' ctl set/show and ping like a shaper that
// adds a fixed excess to every non-zero round trip: the ICMP median is
// base + app delay + db delay (+ excess when either is set).
type simShaper struct {
	base, excess time.Duration
	mu           sync.Mutex               // the agents are asked at once, as the engine is
	delay        map[string]time.Duration // by agent id
	sets         int
}

func (s *simShaper) CreateContainer(context.Context, engine.ContainerSpec) (string, error) {
	return "", nil
}
func (s *simShaper) StartContainer(context.Context, string) error { return nil }
func (s *simShaper) InspectContainer(context.Context, string) (container.InspectResponse, error) {
	return container.InspectResponse{}, nil
}
func (s *simShaper) StopContainer(context.Context, string, time.Duration) error { return nil }
func (s *simShaper) KillContainer(context.Context, string, string) error        { return nil }
func (s *simShaper) RemoveContainer(context.Context, string) error              { return nil }
func (s *simShaper) ListContainers(context.Context, map[string]string) ([]container.Summary, error) {
	return nil, nil
}
func (s *simShaper) Logs(context.Context, string, int) (string, error)                { return "", nil }
func (s *simShaper) CopyToContainer(context.Context, string, string, io.Reader) error { return nil }

func (s *simShaper) Exec(_ context.Context, id string, spec engine.ExecSpec) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := strings.Join(spec.Cmd, " ")
	var reply any
	switch {
	case strings.Contains(cmd, "agent ctl set"):
		for i, a := range spec.Cmd {
			if a == "--delay" {
				ns, err := strconv.ParseInt(strings.TrimSuffix(spec.Cmd[i+1], "ns"), 10, 64)
				if err != nil {
					return 2, err
				}
				s.delay[id] = time.Duration(ns)
			}
		}
		s.sets++
		reply = netem.Reply{OK: true}
	case strings.Contains(cmd, "agent ping"):
		rtt := s.base + s.delay["app-agent"] + s.delay["db-agent"]
		if s.delay["app-agent"]+s.delay["db-agent"] > 0 {
			rtt += s.excess
		}
		reply = workloads.PingResult{Sent: 100, Received: 100, Median: rtt, Mean: rtt}
	default:
		return 1, fmt.Errorf("unexpected exec %q", cmd)
	}
	return 0, json.NewEncoder(spec.Stdout).Encode(reply)
}

func simShaping(sim *simShaper) *Shaping {
	st := &stack.Stack{Members: []*stack.Member{{Role: "app", IP: "10.0.0.2", Shaped: true}, {Role: "db", IP: "10.0.0.3", Shaped: true}}}
	return &Shaping{Stack: st, Scope: "path", Backend: "userspace", Agents: map[string]*Agent{
		"app": {ID: "app-agent", Name: "app-agent"}, "db": {ID: "db-agent", Name: "db-agent"}}}
}

func TestCalibrateRemovesAConstantExcess(t *testing.T) {
	sim := &simShaper{base: 200 * time.Microsecond, excess: 60 * time.Microsecond, delay: map[string]time.Duration{}}
	sh := simShaping(sim)
	pts, err := Calibrate(context.Background(), sim, sh, "go", []float64{0, 0.3, 0.75}, CalibrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 {
		t.Fatalf("%d points, want 2 (0 ms is not calibrated)", len(pts))
	}
	for _, p := range pts {
		if p.AppOffsetUs != -30 || p.DBOffsetUs != -30 || math.Abs(p.ResidualUs) > 1e-9 || p.Rounds != 2 || p.BeforeUs[0] != 60 {
			t.Errorf("%g ms: %+v, want -30 µs per side after 2 rounds (60 µs excess first)", p.RTTms, p)
		}
	}
	// SetRTT applies the offsets; a setting never calibrated is as set.
	for _, c := range []struct {
		rtt     time.Duration
		app, db time.Duration
	}{{750 * time.Microsecond, 345 * time.Microsecond, 345 * time.Microsecond}, {time.Millisecond, 500 * time.Microsecond, 500 * time.Microsecond}, {0, 0, 0}} {
		if err := sh.SetRTT(context.Background(), sim, c.rtt); err != nil {
			t.Fatal(err)
		}
		if sim.delay["app-agent"] != c.app || sim.delay["db-agent"] != c.db {
			t.Errorf("SetRTT(%v): app %v db %v, want %v %v", c.rtt, sim.delay["app-agent"], sim.delay["db-agent"], c.app, c.db)
		}
	}
	// The manifest's points give the same offsets back (a resumed run).
	back := OffsetsFrom(pts, "go")
	if got := back[750]; got != [2]time.Duration{-30 * time.Microsecond, -30 * time.Microsecond} || OffsetsFrom(pts, "node") != nil {
		t.Errorf("offsets from the manifest: %v", back)
	}
}

func TestCalibrateNeverHoldsBelowZero(t *testing.T) {
	// An excess larger than the setting: a side is held for 0, not less.
	sim := &simShaper{base: 200 * time.Microsecond, excess: 120 * time.Microsecond, delay: map[string]time.Duration{}}
	sh := simShaping(sim)
	pts, err := Calibrate(context.Background(), sim, sh, "go", []float64{0.05}, CalibrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pts[0].AppOffsetUs != -25 || pts[0].Rounds != 4 || pts[0].ResidualUs != -50 {
		t.Fatalf("%+v: want the closest round kept (offset clamped at -25 µs) and its residual left visible", pts[0])
	}
}
