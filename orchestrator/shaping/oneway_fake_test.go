package shaping

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/workloads"
)

// Per setting, both agents capture while the probes run; the captures
// are paired per direction into the row, and the added one-way delay is
// what each side holds: half the RTT, plus an offset on the app's side
// at 1 ms (so a swap of the directions shows).
func TestFakeVerifyShapingOneWay(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	_, sh := startFake(t, l, stack.StackOptions{Target: l.Target("go")}, "path")
	sh.Offsets = map[int64][2]time.Duration{1000: {100 * time.Microsecond, 0}}
	rows, err := VerifyShaping(ctx, l, sh, ShapeVerifyOptions{DelaysMs: []float64{0.5, 1}, ICMPCount: 5, SelectRuns: 3, SelectCalls: 10,
		ToleranceMs: 0.05, Seed: 1, OneWay: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if len(r.OneWay) != 2 || r.OneWay[0].Direction != DirAppToDB || r.OneWay[1].Direction != DirDBToApp {
			t.Fatalf("row %g: one-way %+v", r.RTTms, r.OneWay)
		}
		for _, ow := range r.OneWay {
			if ow.Sent != fakelab.CapturePackets || ow.Matched != fakelab.CapturePackets || ow.Share != 1 || ow.Lost != 0 || ow.Ambiguous != 0 {
				t.Errorf("row %g %s: %+v", r.RTTms, ow.Direction, ow.OneWay)
			}
			added := r.RTTms / 2
			if r.RTTms == 1 && ow.Direction == DirAppToDB {
				added += 0.1
			}
			want := netem.Ms(fakelab.BaseOneWay) + added
			if abs(ow.P50Ms-want) > 1e-9 || ow.HaveAdded == r.NoShaper || abs(ow.AddedP50Ms-added) > 1e-9 {
				t.Errorf("row %g %s: p50 %g (want %g), added %g (want %g, %v)", r.RTTms, ow.Direction, ow.P50Ms, want, ow.AddedP50Ms, added, ow.HaveAdded)
			}
		}
	}
	checkCaptureExecs(t, l, sh, len(rows))
}

// checkCaptureExecs: each row started one capture in each agent, on eth0,
// from its own address to the other side's, before that row's ping.
func checkCaptureExecs(t *testing.T, l *fakelab.Lab, sh *Shaping, rows int) {
	t.Helper()
	app, db := sh.Stack.Role("app").IP, sh.Stack.Role("db").IP
	want := map[string]string{sh.Agents["app"].Name: app + ">" + db, sh.Agents["db"].Name: db + ">" + app}
	var seen []string
	pending := 0
	for _, e := range l.Execs() {
		x := &enginefake.Call{Cmd: e.Cmd}
		key := enginefake.CommandKey(e.Cmd)
		switch {
		case strings.HasPrefix(key, "rttlab agent capture "):
			if got := x.Flag("--local") + ">" + x.Flag("--peer"); got != want[e.Container] || x.Flag("--iface") != "eth0" {
				t.Errorf("capture in %s: %s on %s, want %s", e.Container, got, x.Flag("--iface"), want[e.Container])
			}
			seen = append(seen, e.Container)
			pending++
		case strings.HasPrefix(key, "rttlab agent ping "):
			if pending != 2 {
				t.Errorf("a ping ran with %d captures started for its row", pending)
			}
			pending = 0
		}
	}
	slices.Sort(seen)
	if len(seen) != 2*rows || seen[0] != sh.Agents["app"].Name || seen[len(seen)-1] != sh.Agents["db"].Name || seen[rows] != sh.Agents["db"].Name {
		t.Errorf("captures ran in %v", seen)
	}
}

// A capture that cannot start, or prints something else than a capture,
// fails the verify with the agent's own words, never a decoder's; the
// other capture is stopped.
func TestFakeVerifyShapingOneWayFailures(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	_, sh := startFake(t, l, stack.StackOptions{Target: l.Target("go")}, "path")
	o := ShapeVerifyOptions{DelaysMs: []float64{1}, ICMPCount: 2, SelectRuns: 1, SelectCalls: 2, OneWay: true}
	l.HandleStream("rttlab agent capture", func(ctx context.Context, x *enginefake.Call) (int, error) {
		if x.Service() == "db" {
			fmt.Fprintln(x.Stderr, "rttlab: capture: packet socket: operation not permitted (needs CAP_NET_RAW)")
			return 1, nil
		}
		return l.Capture(ctx, x)
	})
	_, err := VerifyShaping(ctx, l, sh, o)
	if err == nil || !strings.Contains(err.Error(), "one-way capture in "+sh.Agents["db"].Name) || !strings.Contains(err.Error(), "CAP_NET_RAW") || strings.Contains(err.Error(), "rttlab: ") {
		t.Errorf("capture without CAP_NET_RAW: %v", err)
	}
	l.HandleStream("rttlab agent capture", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintf(x.Stderr, "%s eth0\n", workloads.CaptureReady)
		_, _ = io.Copy(io.Discard, x.StdinR)
		fmt.Fprintln(x.Stdout, `{"packets": [{"t": "soon"}]}`)
		return 0, nil
	})
	_, err = VerifyShaping(ctx, l, sh, o)
	if err == nil || !strings.Contains(err.Error(), "is not a capture") || strings.Contains(err.Error(), "json") || strings.Contains(err.Error(), "unmarshal") {
		t.Errorf("garbled capture: %v", err)
	}
	l.FailOn("Exec", "agent capture", 1, fmt.Errorf("exec: broken pipe"))
	if _, err = VerifyShaping(ctx, l, sh, o); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("exec failure: %v", err)
	}
}
