package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// RunAgentOnce answers from a short-lived agent container of the run (or
// of a fresh once- run) and removes it.
func TestRunAgentOnce(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	var seen []engine.ContainerSpec
	l.Handle("rttlab agent hello", func(ctx context.Context, x *enginefake.Call) (int, error) {
		seen = append(seen, x.Container.Spec)
		fmt.Fprintln(x.Stdout, `{"hello":"`+x.Flag("--to")+`"}`)
		fmt.Fprintln(x.Stderr, "rttlab: said hello")
		return 3, nil
	})
	var stderr bytes.Buffer
	out, code, err := RunAgentOnce(ctx, engine.NewLab(l, ""), "", "r1", []string{"hello", "--to", "db"}, "host", &stderr)
	if err != nil || code != 3 || string(out) != "{\"hello\":\"db\"}\n" || stderr.String() != "rttlab: said hello\n" {
		t.Fatalf("out %q code %d err %v stderr %q", out, code, err, stderr.String())
	}
	if _, _, err := RunAgentOnce(ctx, engine.NewLab(l, ""), "", "", []string{"hello"}, "none", nil); err != nil {
		t.Fatal(err)
	}
	s := seen[0]
	if !strings.HasPrefix(s.Name, "rttlab-hello-") || s.Image != AgentImage || !slices.Equal(s.Cmd, []string{"agent", "idle"}) || s.NetworkMode != "host" ||
		!slices.Equal(s.CapDrop, []string{"ALL"}) || !slices.Equal(s.CapAdd, []string{"NET_ADMIN", "NET_RAW"}) {
		t.Errorf("spec %+v", s)
	}
	if s.Labels[engine.LabelRun] != "r1" || s.Labels[engine.LabelRole] != engine.RoleOnce || seen[1].NetworkMode != "none" ||
		!strings.HasPrefix(seen[1].Labels[engine.LabelRun], "once-") || seen[1].Name == s.Name {
		t.Errorf("labels %v then %v (%s)", s.Labels, seen[1].Labels, seen[1].NetworkMode)
	}
	l.RequireEmpty(t)
}

// The short-lived container goes whatever fails after it was created.
func TestRunAgentOnceRemovesItsContainer(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	for _, op := range []string{"CreateContainer", "StartContainer", "Exec"} {
		boom := errors.New(op + " failed")
		l.FailOn(op, "", 1, boom)
		if _, _, err := RunAgentOnce(ctx, engine.NewLab(l, ""), "", "r1", []string{"sweep"}, "host", nil); !errors.Is(err, boom) {
			t.Errorf("%s: err = %v", op, err)
		}
		l.RequireEmpty(t)
	}
	if n := l.CountCalls("RemoveContainer"); n != 2 {
		t.Errorf("%d removals, want one after the start and one after the exec", n)
	}
}

// rulesLeft makes the lab's host tables hold rules, by label: a sweep
// removes those of its label prefix and reports them, a sweep --list
// reports them and removes nothing.
func rulesLeft(l *fakelab.Lab, rules ...string) {
	l.Handle("rttlab agent sweep", func(ctx context.Context, x *enginefake.Call) (int, error) {
		var match, kept []string
		for _, r := range rules {
			if strings.HasPrefix(r, x.Flag("--label-prefix")) {
				match = append(match, r)
			} else {
				kept = append(kept, r)
			}
		}
		if slices.Contains(x.Cmd, "--list") {
			return 0, json.NewEncoder(x.Stdout).Encode(map[string][]string{"found": match})
		}
		rules = kept
		return 0, json.NewEncoder(x.Stdout).Encode(map[string][]string{"removed": match})
	})
}

// The wire shaper rules of a run are listed and swept by its label
// prefix, every run's with an empty run id.
func TestSweepAndListWireRules(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	rulesLeft(l, "r1/app-out", "r1/db-out", "r2/app-out")
	if rules, err := ListWireRules(ctx, engine.NewLab(l, ""), "r1"); err != nil || !slices.Equal(rules, []string{"r1/app-out", "r1/db-out"}) {
		t.Errorf("list r1: %q %v", rules, err)
	}
	if n, err := SweepWireRules(ctx, engine.NewLab(l, ""), "r1"); err != nil || n != 2 {
		t.Errorf("sweep r1: %d %v", n, err)
	}
	if rules, err := ListWireRules(ctx, engine.NewLab(l, ""), ""); err != nil || !slices.Equal(rules, []string{"r2/app-out"}) {
		t.Errorf("list all after sweeping r1: %q %v", rules, err)
	}
	if n, err := SweepWireRules(ctx, engine.NewLab(l, ""), ""); err != nil || n != 1 {
		t.Errorf("sweep all: %d %v", n, err)
	}
	l.RequireEmpty(t)
}

// Without the agent image no agent ever ran, so nothing is swept; an
// engine error or a failing sweep is an error in the sweep's own words.
func TestSweepWireRulesFailures(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	l.DropImage(AgentImage)
	if n, err := SweepWireRules(ctx, engine.NewLab(l, ""), "r1"); err != nil || n != 0 || l.CountCalls("CreateContainer") != 0 {
		t.Errorf("no agent image: %d %v, %d containers", n, err, l.CountCalls("CreateContainer"))
	}
	boom := errors.New("inspect: engine is shutting down")
	l.FailOn("ImageID", AgentImage, 1, boom)
	if _, err := ListWireRules(ctx, engine.NewLab(l, ""), "r1"); !errors.Is(err, boom) {
		t.Errorf("engine error: %v", err)
	}
	l.AddImage(AgentImage, nil)
	l.Handle("rttlab agent sweep", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stdout, `{"removed":["r1/app-out"]}`)
		fmt.Fprintln(x.Stderr, "rttlab: sweep: nft: permission denied")
		return 1, nil
	})
	if n, err := SweepWireRules(ctx, engine.NewLab(l, ""), "r1"); n != 1 || err == nil || err.Error() != "sweep wire rules: rttlab: sweep: nft: permission denied" {
		t.Errorf("failing sweep: %d %v", n, err)
	}
	l.FailOn("StartContainer", "", 1, errors.New("no such device"))
	if _, err := ListWireRules(ctx, engine.NewLab(l, ""), "r1"); err == nil || err.Error() != "list wire rules: no such device" {
		t.Errorf("agent not started: %v", err)
	}
	if WireRulePrefix("r1") != "r1/" {
		t.Errorf("prefix %q", WireRulePrefix("r1"))
	}
}

// twoHosts is the fake lab's runtime seen as a cluster of two nodes: a
// member on a host's network records the node it was started on.
type twoHosts struct {
	*engine.Lab
	nodes []string
}

func (h *twoHosts) Hosts(context.Context) ([]string, error) { return []string{"n1", "n2"}, nil }

func (h *twoHosts) StartHostMember(ctx context.Context, s runtime.MemberSpec, net runtime.HostNet) (runtime.Member, error) {
	h.nodes = append(h.nodes, s.Node)
	s.Node = ""
	return h.Lab.StartHostMember(ctx, s, net)
}

// On a runtime of several hosts the wire rules are swept on each host
// (each a member of its own there), and what each removed is added up;
// a host whose sweep fails is named in the error.
func TestSweepWireRulesOnEveryHost(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	rulesLeft(l, "r1/app-out", "r2/app-out")
	h := &twoHosts{Lab: engine.NewLab(l, "")}
	if n, err := SweepWireRules(ctx, h, "r1"); err != nil || n != 1 || !slices.Equal(h.nodes, []string{"n1", "n2"}) {
		t.Errorf("sweep r1 on two hosts: %d %v, started on %q", n, err, h.nodes)
	}
	l.Handle("rttlab agent sweep", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stderr, "rttlab: sweep: nft: permission denied")
		return 1, nil
	})
	_, err := SweepWireRules(ctx, h, "r1")
	if err == nil || !strings.Contains(err.Error(), "sweep wire rules on node n1: rttlab: sweep: nft: permission denied") ||
		!strings.Contains(err.Error(), "sweep wire rules on node n2: ") {
		t.Errorf("failing sweeps: %v", err)
	}
	l.RequireEmpty(t)
}
