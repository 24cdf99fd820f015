package shaping

import (
	"context"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/enginetest"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// Where the delay is held decides what every observer sees. On the wire
// (netem on the sender's link, or the userspace shaper on the run's
// bridge) the receiver's kernel stamps a packet after the hold: iputils
// ping from the app's namespace, which reads the kernel's receive stamps,
// sees the whole RTT; a capture in the database's namespace sees the
// queries arrive late. A shaper killed with SIGKILL leaves its rules in
// the host's tables, where they stop traffic rather than let it pass
// unshaped; the run's cleanup removes them.
func TestIntegrationWireObservers(t *testing.T) {
	rt := enginetest.Engine(t)
	sh := shapedStack(t, rt, "path")
	ctx := context.Background()
	if sh.Agents["app"].CtlID == "" {
		t.Fatalf("no wire shaper: %s", sh.Why)
	}
	const rtt = 2 * time.Millisecond
	if err := sh.SetRTT(ctx, rt, rtt); err != nil {
		t.Fatal(err)
	}
	app, db := sh.Stack.Role("app"), sh.Stack.Role("db")
	ins, err := rt.InspectContainer(ctx, app.ID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(ins.State.Pid), "-n", "ping", "-c", "20", "-i", "0.01", db.IP).CombinedOutput()
	if err != nil {
		t.Fatalf("iputils ping from the app's namespace: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`= ([0-9.]+)/([0-9.]+)/`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no summary in ping's output:\n%s", out)
	}
	fastest, _ := strconv.ParseFloat(m[1], 64)
	t.Logf("iputils ping at %v RTT: min %s ms, mean %s ms", rtt, m[1], m[2])
	if fastest < 1.9 {
		t.Errorf("ping's fastest echo %.3f ms at a %v RTT: the receiver's kernel saw packets before the hold", fastest, rtt)
	}

	// The captures: both directions arrive late by about half the RTT.
	rows, err := VerifyShaping(ctx, rt, sh, ShapeVerifyOptions{DelaysMs: []float64{2}, ICMPCount: 20,
		SelectRuns: 2, SelectCalls: 50, ToleranceMs: 0.05, Seed: 1, OneWay: true})
	if err != nil {
		t.Fatal(err)
	}
	last := rows[len(rows)-1]
	if len(last.OneWay) != 2 {
		t.Fatalf("2 ms row: one-way %+v", last.OneWay)
	}
	for _, d := range last.OneWay {
		t.Logf("%s at 2 ms: paired %d of %d, p50 %.4f ms (added %+.4f), p99 %.4f", d.Direction, d.Matched, d.Sent, d.P50Ms, d.AddedP50Ms, d.P99Ms)
		if d.Matched == 0 || d.MinMs < 0.9 {
			t.Errorf("%s: the receiver saw a packet %.4f ms after it left, want the 1 ms one-way delay", d.Direction, d.MinMs)
		}
	}

	// SIGKILL the database's shaper: its rules stay (and hold traffic)
	// until the run's cleanup sweeps them.
	if err := rt.KillContainer(ctx, sh.Agents["db"].ctl().ID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	left, err := stack.ListWireRules(ctx, engine.NewLab(rt, ""), sh.Stack.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(left, "\n"), "-s "+db.IP+"/32") {
		t.Fatalf("a killed shaper's rule is gone before cleanup: %q", left)
	}
	if err := sh.CheckAgents(ctx, engine.NewLab(rt, "")); err == nil {
		t.Error("a killed shaper went unnoticed")
	}
	if _, err := stack.CleanRun(ctx, engine.NewLab(rt, ""), sh.Stack.RunID); err != nil {
		t.Fatal(err)
	}
	if left, err := stack.ListWireRules(ctx, engine.NewLab(rt, ""), sh.Stack.RunID); err != nil || len(left) > 0 {
		t.Fatalf("rules of the run left after its cleanup: %q (%v)", left, err)
	}
}

// Two runs on one engine, each with its own bridge and its own wire
// shaper: the rules of each match only its own network, a delay set in
// one is not seen in the other, and cleaning one leaves the other's rules
// and delay in place.
func TestIntegrationWireTwoRuns(t *testing.T) {
	rt := enginetest.Engine(t)
	a := shapedStack(t, rt, "path")
	b := shapedStack(t, rt, "path")
	ctx := context.Background()
	if err := a.SetRTT(ctx, rt, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := b.SetRTT(ctx, rt, 0); err != nil {
		t.Fatal(err)
	}
	fastest := func(sh *Shaping) float64 {
		t.Helper()
		ins, err := rt.InspectContainer(ctx, sh.Stack.Role("app").ID)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("nsenter", "-t", strconv.Itoa(ins.State.Pid), "-n", "ping", "-c", "20", "-i", "0.01", sh.Stack.Role("db").IP).CombinedOutput()
		if err != nil {
			t.Fatalf("ping in run %s: %v\n%s", sh.Stack.RunID, err, out)
		}
		m := regexp.MustCompile(`= ([0-9.]+)/`).FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("no summary in ping's output:\n%s", out)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	fa, fb := fastest(a), fastest(b)
	t.Logf("fastest echo: run A (2 ms) %.3f ms, run B (0 ms) %.3f ms", fa, fb)
	if fa < 1.9 {
		t.Errorf("run A at 2 ms: fastest echo %.3f ms", fa)
	}
	if fb > 1.0 {
		t.Errorf("run B at 0 ms saw run A's delay: fastest echo %.3f ms", fb)
	}
	for _, sh := range []*Shaping{a, b} {
		rules, err := stack.ListWireRules(ctx, engine.NewLab(rt, ""), sh.Stack.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if len(rules) == 0 {
			t.Fatalf("run %s has no wire rules", sh.Stack.RunID)
		}
		br := engine.NewLab(nil, "").Bridge(sh.Stack.NetworkID)
		for _, r := range rules {
			if !strings.Contains(r, "-i "+br+" ") {
				t.Errorf("run %s: rule %q does not match only its bridge %s", sh.Stack.RunID, r, br)
			}
		}
	}
	if _, err := stack.CleanRun(ctx, engine.NewLab(rt, ""), a.Stack.RunID); err != nil {
		t.Fatal(err)
	}
	if left, err := stack.ListWireRules(ctx, engine.NewLab(rt, ""), a.Stack.RunID); err != nil || len(left) > 0 {
		t.Fatalf("run A's rules after its cleanup: %q (%v)", left, err)
	}
	if rules, err := stack.ListWireRules(ctx, engine.NewLab(rt, ""), b.Stack.RunID); err != nil || len(rules) == 0 {
		t.Fatalf("cleaning run A took run B's rules: %q (%v)", rules, err)
	}
	if err := b.SetRTT(ctx, rt, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if fb := fastest(b); fb < 1.9 {
		t.Errorf("run B at 2 ms after run A's cleanup: fastest echo %.3f ms", fb)
	}
}
