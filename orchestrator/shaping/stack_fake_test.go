package shaping

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// Shaped stacks, their agents, verification and cleanup with agents
// running, against the fake lab (orchestrator/fakelab).

// startFake starts a shaped stack of app on the lab and removes it when
// the test ends.
func startFake(t *testing.T, l *fakelab.Lab, o stack.StackOptions, scope string) (*stack.Stack, *Shaping) {
	t.Helper()
	st, sh, err := StartShaped(context.Background(), engine.NewLab(l, ""), o, "auto", scope, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Remove(context.Background(), engine.NewLab(l, "")) })
	return st, sh
}

// `rttlab up`: a published stack labelled as such, found again by its run
// id for `rttlab shape`, with the delay split over both sides.
func TestFakeUpStackShapeAndDown(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	// The app's real port (8080) is published; the fake engine maps it to
	// the fake app's port on 127.0.0.1.
	all, _ := apps.Load(apps.FS(""))
	tg, _ := apps.Resolve(all, "go")
	st, sh := startFake(t, l, stack.StackOptions{Target: tg, Up: true, Publish: true}, "path")
	if st.AppURL != "http://127.0.0.1:"+l.HostPort || st.BaseURL() != st.AppURL || !strings.HasSuffix(st.AppAddr, ":8080") {
		t.Fatalf("app URL %q, addr %q", st.AppURL, st.AppAddr)
	}
	if sh.Backend != "kernel" || sh.Why == "" {
		t.Errorf("backend %q (%q)", sh.Backend, sh.Why)
	}
	for _, c := range l.Created() {
		if c.Labels[engine.LabelStack] != "up" && c.Labels[engine.LabelRole] != "agent" {
			t.Errorf("%s lacks the up label: %v", c.Name, c.Labels)
		}
		if c.Labels[engine.LabelRole] == "app" && (!slices.Equal(c.PublishLocal, []string{"8080/tcp"}) || c.Labels[engine.LabelApp] != "go") {
			t.Errorf("app spec %+v", c)
		}
		if c.Labels[engine.LabelRole] == "app" && !slices.Contains(c.Env, "PGPASSWORD="+st.DB.Password) {
			t.Errorf("app env %v lacks the stack's password", c.Env)
		}
	}

	found, err := FindShaping(ctx, engine.NewLab(l, ""), st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if found.Stack.DB.Password != st.DB.Password || found.Stack.Role("db").IP != st.Role("db").IP || len(found.Agents) != 2 {
		t.Fatalf("found %+v", found.Stack)
	}
	if err := found.SetRTT(ctx, l, 500*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	reps, err := found.Show(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"app", "db"} {
		r := reps[side]
		if !r.Active || r.DelayNs != 250000 || r.Scope != "path" || len(r.Peers) != 1 {
			t.Errorf("%s: %+v", side, r)
		}
	}
	if reps["app"].Peers[0] != st.Role("db").IP || reps["db"].Peers[0] != st.Role("app").IP {
		t.Errorf("peers app %v db %v", reps["app"].Peers, reps["db"].Peers)
	}
	found.Scope = "interface"
	if err := found.SetRTT(ctx, l, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if reps, _ := found.Show(ctx, l); reps["db"].Scope != "interface" || reps["db"].DelayNs != 500000 {
		t.Errorf("interface scope: %+v", reps["db"])
	}
	if err := found.Clear(ctx, l); err != nil {
		t.Fatal(err)
	}
	if l.RTT() != 0 {
		t.Errorf("delay after clear: %s", l.RTT())
	}
	if err := found.SetRTT(ctx, l, -time.Millisecond); err == nil {
		t.Error("a negative delay was applied")
	}

	// Not a stack of ours, a stopped agent, no agents.
	if _, err := FindShaping(ctx, engine.NewLab(l, ""), "0000000000"); err == nil || !strings.Contains(err.Error(), "not a stack rttlab started") {
		t.Errorf("unknown run: %v", err)
	}
	l.Exit("-app-agent", 137, "")
	if _, err := FindShaping(ctx, engine.NewLab(l, ""), st.RunID); err == nil || !strings.Contains(err.Error(), "is not running") || !strings.Contains(err.Error(), "(exited)") {
		t.Errorf("stopped agent: %v", err)
	}
	for _, c := range l.Created() {
		if c.Labels[engine.LabelRole] == "agent" {
			l.RemoveContainer(ctx, c.Name)
		}
	}
	if _, err := FindShaping(ctx, engine.NewLab(l, ""), st.RunID); err == nil || !strings.Contains(err.Error(), "no shaping agents") {
		t.Errorf("no agents: %v", err)
	}

	// down: everything of the run goes, and only that.
	l.AddVolume("other", map[string]string{engine.LabelRun: "other"})
	l.AddVolume("mine", map[string]string{engine.LabelRun: st.RunID})
	c, err := stack.CleanRun(ctx, engine.NewLab(l, ""), st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Containers != 2 || c.Networks != 1 || c.Volumes != 1 || c.String() != "2 container(s), 1 network(s), 1 volume(s)" {
		t.Errorf("cleaned %s", c)
	}
	l.RequireEmpty(t)
	if vs, _ := l.ListVolumes(ctx, nil); !slices.Equal(vs, []string{"other"}) {
		t.Errorf("volumes left %v", vs)
	}
}

// The agents' replies: an error from the shaper is reported in its own
// words, a reply that is not JSON is refused, and so are bad scopes.
func TestFakeAgentReplies(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	_, sh := startFake(t, l, stack.StackOptions{Target: l.Target("go")}, "path")

	l.Handle("rttlab agent ctl set", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stdout, `{"ok":false,"error":"qdisc add: operation not permitted"}`)
		fmt.Fprintln(x.Stderr, "rttlab: exit 1")
		return 1, nil
	})
	if err := sh.SetRTT(ctx, l, time.Millisecond); err == nil || !strings.Contains(err.Error(), "set app delay 500µs") || !strings.Contains(err.Error(), "operation not permitted") {
		t.Errorf("shaper error: %v", err)
	}
	l.Handle("rttlab agent ctl set", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stdout, "Segmentation fault")
		return 0, nil
	})
	if err := sh.SetRTT(ctx, l, time.Millisecond); err == nil || !strings.Contains(err.Error(), "bad reply") {
		t.Errorf("garbage reply: %v", err)
	}
	l.Handle("rttlab agent ctl clear", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stderr, "rttlab: dial unix /run/rttlab/agent.sock: connect: no such file or directory")
		return 1, nil
	})
	if err := sh.Clear(ctx, l); err == nil || !strings.Contains(err.Error(), "agent.sock") {
		t.Errorf("clear: %v", err)
	}
	l.FailOn("Exec", "agent ctl show", 1, errors.New("exec: connection reset"))
	if _, err := sh.Show(ctx, l); err == nil {
		t.Error("show error lost")
	}
	l.Handle("rttlab agent ping", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stderr, "rttlab: raw socket: operation not permitted")
		return 1, nil
	})
	if _, err := sh.Ping(ctx, l, 3, time.Millisecond); err == nil || !strings.Contains(err.Error(), "operation not permitted") {
		t.Errorf("ping: %v", err)
	}
	l.Handle("rttlab agent ping", func(ctx context.Context, x *enginefake.Call) (int, error) { return 0, nil })
	if _, err := sh.Ping(ctx, l, 3, time.Millisecond); err == nil {
		t.Error("empty ping output accepted")
	}
	l.Handle("rttlab agent sqlprobe", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stdout, "[{")
		return 0, nil
	})
	if _, err := sh.SelectOne(ctx, l, 1, 1); err == nil || !strings.Contains(err.Error(), "SELECT 1 probe") {
		t.Errorf("sqlprobe: %v", err)
	}
	l.Handle("rttlab agent ctl set", l.Ctl)
	delete(sh.Agents, "db")
	if err := sh.SetRTT(ctx, l, time.Millisecond); err == nil || !strings.Contains(err.Error(), "no agent for db") {
		t.Errorf("missing agent: %v", err)
	}
	if _, err := StartAgents(ctx, engine.NewLab(l, ""), sh.Stack, "auto", "everything", ""); err == nil || !strings.Contains(err.Error(), "scope") {
		t.Errorf("bad scope: %v", err)
	}
}

// The shaper accuracy table: added RTT against the 0 ms setting, flagged
// when it misses the configured value.
func TestFakeVerifyShaping(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	_, sh := startFake(t, l, stack.StackOptions{Target: l.Target("go")}, "path")
	var seen []ShapeRow
	o := ShapeVerifyOptions{DelaysMs: []float64{0.5, 0, 1}, ICMPCount: 5, SelectRuns: 3, SelectCalls: 10, ToleranceMs: 0.05, Seed: 1,
		Row: func(r ShapeRow) { seen = append(seen, r) }}
	rows, err := VerifyShaping(ctx, l, sh, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || len(seen) != 4 || !rows[0].NoShaper || rows[1].RTTms != 0 || rows[1].HaveBaseline || rows[2].RTTms != 0.5 || rows[3].RTTms != 1 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows[2:] {
		if r.Flag || !r.HaveBaseline || abs(r.AddedMs-r.RTTms) > 1e-9 || abs(r.Select1Diff-r.RTTms) > 1e-9 {
			t.Errorf("row %g: added %g, SELECT 1 %+g, flag %v", r.RTTms, r.AddedMs, r.Select1Diff, r.Flag)
		}
		if r.Select1CI.Low > r.Select1Diff || r.Select1CI.High < r.Select1Diff {
			t.Errorf("row %g: CI %+v excludes %g", r.RTTms, r.Select1CI, r.Select1Diff)
		}
	}
	// A shaper that delays one side only is out of tolerance.
	l.Handle("rttlab agent ctl set", func(ctx context.Context, x *enginefake.Call) (int, error) {
		if x.Service() == "db" {
			x.Cmd = slices.Clone(x.Cmd)
			x.Cmd[5] = "0ns"
		}
		return l.Ctl(ctx, x)
	})
	rows, err = VerifyShaping(ctx, l, sh, ShapeVerifyOptions{DelaysMs: []float64{1}, ICMPCount: 5, SelectRuns: 3, SelectCalls: 10, ToleranceMs: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if last := rows[len(rows)-1]; !last.Flag || abs(last.AddedMs-0.5) > 1e-9 {
		t.Errorf("half a delay not flagged: %+v", last)
	}
	l.FailOn("Exec", "agent sqlprobe", 1, errors.New("exec: broken pipe"))
	if _, err := VerifyShaping(ctx, l, sh, o); err == nil {
		t.Error("probe failure lost")
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// verify: the route contract and the database work, against the fake app
// (which does exactly the contract's work unless told otherwise).
func TestFakeVerifyStack(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	st, sh := startFake(t, l, stack.StackOptions{Target: l.Target("go")}, "path")
	var progress int
	checks, err := VerifyStack(ctx, l, st, VerifyOptions{Requests: 4, SerialN: 5, Shaping: sh, Progress: func(Check) { progress++ }})
	if err != nil {
		t.Fatal(err)
	}
	// health, 3 routes, 4 bad n, 3 counts, 3 routes x 2 wire checks
	if len(checks) != 1+3+4+3+6 || progress != len(checks) {
		t.Fatalf("%d checks (%d reported)", len(checks), progress)
	}
	if bad := Failed(checks); len(bad) != 0 {
		t.Fatalf("failed: %v", bad)
	}
	for _, c := range checks {
		if c.App != "go" || !strings.HasPrefix(c.String(), "OK   go ") {
			t.Errorf("check %s", c)
		}
	}

	// One statement too many per request fails every count, with the
	// statements the database saw.
	l.Mu.Lock()
	l.Extra = 1
	l.Mu.Unlock()
	checks, err = VerifyStack(ctx, l, st, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad := Failed(checks)
	if len(bad) != 3 {
		t.Fatalf("failed %v", bad)
	}
	if c := bad[0]; c.Route != "/feed" || c.Expected != "3" || c.Observed != "4" || !strings.Contains(c.String(), "FAIL go /feed: statements per request (expected 3, observed 4)") || !strings.Contains(c.Detail, "x SELECT") {
		t.Errorf("count failure: %s", c)
	}

	// psql failing is an error, not a failed check.
	l.Handle("psql", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stderr, `psql: error: connection to server on socket "/run/postgresql/.s.PGSQL.5432" failed`)
		return 2, nil
	})
	if _, err := VerifyStack(ctx, l, st, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "psql: exit 2") {
		t.Errorf("psql failure: %v", err)
	}
	if _, err := (&stack.Stack{RunID: "x"}).SQL(ctx, l, "SELECT 1"); err == nil {
		t.Error("SQL without a database")
	}
}

// A broken app: wrong status, wrong content type, wrong shape.
func TestFakeVerifyStackCatchesContractBreaks(t *testing.T) {
	l := fakelab.New(t)
	st, _ := startFake(t, l, stack.StackOptions{Target: l.Target("go")}, "path")
	hc := l.App.Client()
	base := st.BaseURL()
	if c := checkJSON(context.Background(), hc, base, "/nope", 200, nil); c.OK || c.Observed != "404 application/json" || !strings.Contains(c.Detail, "not found") {
		t.Errorf("404: %+v", c)
	}
	if c := checkJSON(context.Background(), hc, base, "/serial?n=4", 200, shapeFor("/serial", 5)); c.OK || !strings.Contains(c.Detail, `"n" is 4, want 5`) {
		t.Errorf("serial shape: %+v", c)
	}
	if c := checkJSON(context.Background(), hc, base, "/health", 200, feedShape); c.OK || !strings.Contains(c.Detail, "account") {
		t.Errorf("feed shape: %+v", c)
	}
	if c := checkJSON(context.Background(), hc, base, "/serial?n=1", 200, hasError); c.OK || !strings.Contains(c.Detail, "error") {
		t.Errorf("error shape: %+v", c)
	}
	if c := checkJSON(context.Background(), hc, "http://127.0.0.1:1", "/", 200, nil); c.OK || c.Observed != "error" {
		t.Errorf("no server: %+v", c)
	}
	if c := checkStatus(context.Background(), hc, "http://127.0.0.1:1", "/", 401, nil); c.OK || c.Observed != "error" {
		t.Errorf("no server: %+v", c)
	}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{[]any{}, "not a JSON object"},
		{map[string]any{"account": map[string]any{"name": "x"}}, "want \"reader\""},
		{map[string]any{"account": map[string]any{"name": "reader"}}, "articles"},
		{map[string]any{"account": map[string]any{"name": "reader"}, "articles": []any{}}, "0 articles"},
	} {
		if err := feedShape(tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("feedShape(%v) = %v, want %q", tc.v, err, tc.want)
		}
	}
	arts := make([]any, apps.FeedArticles)
	for i := range arts {
		arts[i] = map[string]any{"id": 1.0, "title": "t"}
	}
	if err := feedShape(map[string]any{"account": map[string]any{"name": "reader"}, "articles": arts}); err == nil || !strings.Contains(err.Error(), "feedback") {
		t.Errorf("feedback: %v", err)
	}
}

// An app driven by a request mix is checked with its auth header, and a
// wrong key must be refused; axum-raw's extra round trip per statement is
// checked against what the wire shows.
func TestFakeVerifyMixAndVariant(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	st, _ := startFake(t, l, stack.StackOptions{Target: l.Target("redmine")}, "path")
	checks, err := VerifyStack(ctx, l, st, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 6 || len(Failed(checks)) != 0 {
		t.Fatalf("redmine checks %v", checks)
	}

	l.AddImage(engine.ImageRef("axum"), nil)
	raw := l.Target("axum-raw")
	st, sh := startFake(t, l, stack.StackOptions{Target: raw}, "path")
	for _, c := range l.Created() {
		if c.Labels[engine.LabelRun] == st.RunID && c.Labels[engine.LabelRole] == "app" && !slices.Contains(c.Env, "RTTLAB_AXUM_MODE=raw") {
			t.Errorf("variant not passed: %v", c.Env)
		}
	}
	wc, err := wireChecks(ctx, l, sh, VerifyOptions{Requests: 2, SerialN: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The fake wire shows one round trip and no Parse per statement:
	// axum-raw declares two or three and one.
	bad := Failed(wc)
	if len(bad) != 6 || !strings.Contains(bad[0].Detail, `variant "raw"`) || bad[0].Expected != "6-7" {
		t.Fatalf("wire checks %v", wc)
	}
}

func TestFakeCleanAll(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	st1, _ := startFake(t, l, stack.StackOptions{Target: l.Target("go")}, "path")
	startFake(t, l, stack.StackOptions{Target: l.Target("node")}, "interface")
	// Someone else's container on the same engine is never touched.
	l.AddImage("postgres:17", nil)
	if _, err := l.CreateContainer(ctx, engine.ContainerSpec{Name: "their-db", Image: "postgres:17"}); err != nil {
		t.Fatal(err)
	}
	l.AddVolume("rttlab-vol", map[string]string{engine.LabelRun: st1.RunID})

	// A container that cannot be removed: the others go, the error says
	// which, and its network stays.
	l.FailOn("RemoveContainer", "-db", 1, errors.New("remove: device or resource busy"))
	before := len(l.Calls())
	c, err := stack.CleanAll(ctx, engine.NewLab(l, ""), false)
	if err == nil || !strings.Contains(err.Error(), "device or resource busy") || !strings.Contains(err.Error(), "active endpoints") {
		t.Fatalf("err = %v", err)
	}
	if c.Containers != 7 || c.Networks != 1 || c.Volumes != 1 {
		t.Errorf("cleaned %s", c)
	}
	// Agents and clients stop first, then everything is removed.
	calls := l.Calls()
	calls = calls[before:] // the clean's own calls
	firstStop := slices.IndexFunc(calls, func(s string) bool { return strings.HasPrefix(s, "StopContainer ") })
	firstRemove := slices.IndexFunc(calls, func(s string) bool { return strings.HasPrefix(s, "RemoveContainer ") })
	if firstStop < 0 || firstStop > firstRemove {
		t.Errorf("no stop before the first removal: %v", calls)
	}
	ours := 0
	for _, img := range l.Images() {
		if _, ok := img.Labels[engine.LabelApp]; ok {
			ours++
		}
	}
	c, err = stack.CleanAll(ctx, engine.NewLab(l, ""), true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Containers != 1 || c.Networks != 1 || c.Images != ours || !strings.HasSuffix(c.String(), fmt.Sprintf(", %d image(s)", ours)) {
		t.Errorf("cleaned %s", c)
	}
	cs, ns := l.Live()
	if !slices.Equal(cs, []string{"their-db"}) || len(ns) != 0 {
		t.Errorf("left %v %v", cs, ns)
	}
	if _, err := l.ImageID(ctx, "postgres:17"); err != nil {
		t.Errorf("an image rttlab did not build was removed: %v", err)
	}

	if _, err := stack.CleanRun(ctx, engine.NewLab(l, ""), ""); err == nil {
		t.Error("CleanRun without a run id")
	}
	l.FailOn("ListContainers", "", 1, errors.New("engine gone"))
	if _, err := stack.CleanRun(ctx, engine.NewLab(l, ""), "x"); err == nil {
		t.Error("list failure lost")
	}
	l.FailOn("ListNetworks", "", 1, errors.New("engine gone"))
	l.FailOn("ListVolumes", "", 1, errors.New("engine gone"))
	if _, err := stack.CleanRun(ctx, engine.NewLab(l, ""), "x"); err == nil || strings.Count(err.Error(), "engine gone") != 2 {
		t.Errorf("list failures: %v", err)
	}
}

// RTTLAB_IMAGE_PREFIX names the database's image too, not only the app's.
func TestFakeStackUsesTheImagePrefixForEveryMember(t *testing.T) {
	saved, savedAgent := engine.ImagePrefix, stack.AgentImage
	engine.ImagePrefix = "alt/"
	stack.AgentImage = engine.ImageRef("agent")
	t.Cleanup(func() { engine.ImagePrefix, stack.AgentImage = saved, savedAgent })
	l := fakelab.New(t)
	st, _ := startFake(t, l, stack.StackOptions{Target: l.Target("go")}, "path")
	for _, m := range st.Members {
		ins, err := l.InspectContainer(context.Background(), m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ins.Config.Image, "alt/") {
			t.Errorf("%s runs %s, want an alt/ image", m.Role, ins.Config.Image)
		}
	}
}

// A stack of a foreign platform creates the database and the app with
// that platform from its arch-tagged images, and every agent with the
// engine's own from today's agent image: the fake engine, like the real
// one, refuses a container whose image is of another platform.
func TestFakeForeignPlatformStack(t *testing.T) {
	l := fakelab.New(t)
	arm, err := engine.ParsePlatform("linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	arm, _ = arm.On(engine.EngineInfo{OS: "linux", Arch: "amd64"})
	for _, n := range []string{"postgres", "go"} {
		l.AddPlatformImage(arm.ImageRef(n), map[string]string{engine.LabelApp: n}, "linux/arm64")
	}
	l.AddPlatformImage(engine.ImageRef("agent"), map[string]string{engine.LabelApp: "agent"}, "linux/amd64")
	st, _ := startFake(t, l, stack.StackOptions{Target: l.Target("go"), Platform: arm}, "path")
	if st.Platform != arm {
		t.Errorf("stack platform %+v", st.Platform)
	}
	created := l.Created()
	if len(created) < 4 {
		t.Fatalf("created %d containers", len(created))
	}
	for _, c := range created {
		want := "linux/amd64"
		if role := c.Labels[engine.LabelRole]; role == "db" || role == "app" {
			want = "linux/arm64"
			if c.Image != arm.ImageRef(map[string]string{"db": "postgres", "app": "go"}[role]) {
				t.Errorf("%s runs %s", c.Name, c.Image)
			}
		} else if c.Image != stack.AgentImage {
			t.Errorf("%s (%s) runs %s, want the agent", c.Name, role, c.Image)
		}
		if c.Platform.String() != want {
			t.Errorf("%s (%s) created for %q, want %s", c.Name, c.Labels[engine.LabelRole], c.Platform, want)
		}
	}
	// The engine's own stack runs beside it, from today's images.
	startFake(t, l, stack.StackOptions{Target: l.Target("go"), Platform: arm.Native()}, "path")
}
