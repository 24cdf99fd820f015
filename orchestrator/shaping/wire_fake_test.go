package shaping

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// Where the kernel lacks netem, "auto" gets the userspace shaper on the
// wire: a sidecar for probes in each member's namespace, and a shaper
// container on the host's network holding what that member sends on the
// stack's bridge; the shaper is what ctl talks to and what `shape` finds
// again; a killed shaper's rules are swept by the run's cleanup.
func TestFakeWireAgents(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	l.NoNetem = true
	tg := l.Target("go")
	st, sh := startFake(t, l, stack.StackOptions{Target: tg}, "path")
	if len(sh.Agents) != 2 {
		t.Fatalf("agents %v", sh.Agents)
	}
	bridge := "br-" + st.NetworkID[:12]
	for role, a := range sh.Agents {
		if a.CtlID == "" || a.CtlID == a.ID {
			t.Fatalf("%s: no shaper container of its own: %+v", role, a)
		}
		var side, shaper engine.ContainerSpec
		for _, c := range l.Created() {
			switch c.Name {
			case a.Name:
				side = c
			case a.CtlName:
				shaper = c
			}
		}
		if !slices.Equal(side.Cmd, []string{"agent", "idle"}) || side.NetworkMode != "container:"+a.Target.ID {
			t.Errorf("%s sidecar: cmd %v mode %s", role, side.Cmd, side.NetworkMode)
		}
		want := []string{"--shaper", "userspace", "--hook", "wire", "--bridge", bridge, "--src", a.Target.IP, "--label", st.RunID + "/" + a.Target.Name}
		if shaper.NetworkMode != "host" || !containsSeq(shaper.Cmd, want) {
			t.Errorf("%s shaper: mode %s cmd %v, want %v", role, shaper.NetworkMode, shaper.Cmd, want)
		}
		if slices.Contains(shaper.CapAdd, "SYS_ADMIN") || !slices.Equal(shaper.CapDrop, []string{"ALL"}) {
			t.Errorf("%s shaper caps add %v drop %v", role, shaper.CapAdd, shaper.CapDrop)
		}
		if shaper.Labels[engine.LabelRun] != st.RunID || shaper.Labels[engine.LabelRole] != stack.RoleShaper || shaper.Labels[engine.LabelTarget] != a.Target.ID {
			t.Errorf("%s shaper labels %v", role, shaper.Labels)
		}
	}
	// ctl goes to the shaper containers, probes stay in the sidecars.
	if err := sh.SetRTT(ctx, l, 0); err != nil {
		t.Fatal(err)
	}
	for _, x := range l.Execs() {
		if strings.Contains(strings.Join(x.Cmd, " "), "agent ctl") && !strings.HasSuffix(x.Container, "-wire") {
			t.Errorf("ctl ran in %s", x.Container)
		}
	}
	found, err := FindShaping(ctx, engine.NewLab(l, ""), st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for role, a := range found.Agents {
		if a.CtlID != sh.Agents[role].CtlID || a.ID != sh.Agents[role].ID {
			t.Errorf("found %s agent %+v, want %+v", role, a, sh.Agents[role])
		}
	}
	// A shaper killed (SIGKILL: it could not remove its rules) is a dead
	// agent, and the run's cleanup sweeps its rules from the host.
	if n := l.Exit("-db-wire", 137, ""); n != 1 {
		t.Fatalf("killed %d shapers", n)
	}
	if err := sh.CheckAgents(ctx, engine.NewLab(l, "")); err == nil || !strings.Contains(err.Error(), "-db-wire") {
		t.Errorf("CheckAgents after a killed shaper: %v", err)
	}
	if err := st.Remove(ctx, engine.NewLab(l, "")); err != nil {
		t.Fatal(err)
	}
	if got := l.Sweeps(); !slices.Equal(got, []string{st.RunID + "/"}) {
		t.Errorf("sweeps %q, want the run's", got)
	}
	l.RequireEmpty(t)
}

// With kernel netem, the agents shape in their members' namespaces as
// before, whatever the hook, and no sweep runs at cleanup.
func TestFakeKernelAgentsNoWire(t *testing.T) {
	l := fakelab.New(t)
	tg := l.Target("go")
	st, sh := startFake(t, l, stack.StackOptions{Target: tg}, "path")
	for role, a := range sh.Agents {
		if a.CtlID != "" {
			t.Errorf("%s: a wire shaper with kernel netem", role)
		}
	}
	// The kernel agent is given no wire hook, whose flags it would need.
	for _, c := range l.Created() {
		if c.Labels[engine.LabelRole] == "agent" && slices.Contains(c.Cmd, "--hook") {
			t.Errorf("%s: kernel agent started with %v", c.Name, c.Cmd)
		}
	}
	if err := st.Remove(context.Background(), engine.NewLab(l, "")); err != nil {
		t.Fatal(err)
	}
	if got := l.Sweeps(); len(got) != 0 {
		t.Errorf("sweeps %q", got)
	}
}

func TestValidHookAndBridge(t *testing.T) {
	for _, h := range []string{"", "wire", "ingress", "egress"} {
		if err := ValidHook(h); err != nil {
			t.Errorf("%q: %v", h, err)
		}
	}
	if err := ValidHook("prerouting"); err == nil || !strings.Contains(err.Error(), "use wire (the default), ingress or egress") {
		t.Errorf("bad hook: %v", err)
	}
	if b := engine.NewLab(nil, "").Bridge("0123456789abcdef0123"); b != "br-0123456789ab" {
		t.Errorf("bridge %s", b)
	}
}

func containsSeq(s, sub []string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if slices.Equal(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
