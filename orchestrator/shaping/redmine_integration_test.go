package shaping

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docker/go-connections/nat"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/enginetest"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/workloads"
)

func redmineCount(t *testing.T, st *stack.Stack, hdr []string, path string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, st.AppURL+path, nil)
	k, v, _ := strings.Cut(hdr[0], ":")
	req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	var body struct {
		TotalCount int `json:"total_count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.TotalCount
}

func TestIntegrationRedmine(t *testing.T) {
	rt := enginetest.Engine(t)
	target := enginetest.BuiltTarget(t, rt, "redmine", "postgres", "agent", "redmine")
	ctx := context.Background()
	st, err := stack.StartStack(ctx, engine.NewLab(rt, ""), stack.StackOptions{Target: target, Publish: true, ReadyTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Remove(context.Background(), engine.NewLab(rt, "")) })
	hdr, err := AuthHeaders(ctx, rt, st)
	if err != nil {
		t.Fatal(err)
	}
	counts := func() (int, int) {
		return redmineCount(t, st, hdr, "/projects.json?limit=1"), redmineCount(t, st, hdr, "/issues.json?limit=1&status_id=*")
	}
	if p, i := counts(); p != 12 || i != 360 {
		t.Fatalf("set-up gave %d projects and %d issues, want 12 and 360", p, i)
	}
	// Set-up is idempotent: a restart adds nothing.
	app := st.Role("app")
	if err := rt.StopContainer(ctx, app.ID, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, app.ID); err != nil {
		t.Fatal(err)
	}
	ins, err := rt.InspectContainer(ctx, app.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range ins.NetworkSettings.Ports[nat.Port("8080/tcp")] {
		st.AppURL = "http://" + b.HostIP + ":" + b.HostPort
	}
	if err := stack.WaitApp(ctx, engine.NewLab(rt, ""), st, app, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if hdr, err = AuthHeaders(ctx, rt, st); err != nil {
		t.Fatal(err)
	}
	if p, i := counts(); p != 12 || i != 360 {
		t.Fatalf("after a restart: %d projects and %d issues, want 12 and 360", p, i)
	}

	// Verify: every request type answers 200 with the key, 401 without.
	checks, err := VerifyStack(ctx, rt, st, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bad := Failed(checks); len(bad) > 0 {
		t.Fatalf("verify redmine: %v", bad)
	}

	// A reduced mix from a client container: only 200s, all three types
	// in about the right proportions.
	sh, err := StartAgents(ctx, engine.NewLab(rt, ""), st, "auto", "path", "")
	if err != nil {
		t.Fatal(err)
	}
	client := prober(t, rt, sh, "client", "", st.Network)
	var out, errb bytes.Buffer
	cmd := []string{"/usr/local/bin/rttlab", "agent", "load", "--url", "http://app:8080", "--mix", "redmine", "--seed", "7",
		"--warmup", "5", "--requests", "60", "--header", hdr[0]}
	code, err := rt.Exec(ctx, client, engine.ExecSpec{Cmd: cmd, Stdout: &out, Stderr: &errb, Timeout: 10 * time.Minute})
	if err != nil || code != 0 {
		t.Fatalf("load: %d %v %s", code, err, errb.String())
	}
	rs, err := workloads.DecodeResults(&out)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for _, r := range rs {
		if r.Status != 200 || r.Error != "" {
			t.Fatalf("request %s: status %d %s", r.Path, r.Status, r.Error)
		}
		switch {
		case strings.HasPrefix(r.Path, "/issues.json"):
			types["list"]++
		case strings.HasPrefix(r.Path, "/issues/"):
			types["detail"]++
		case strings.HasPrefix(r.Path, "/projects.json"):
			types["projects"]++
		}
	}
	t.Logf("mix of %d requests: %v", len(rs), types)
	if types["list"] < 25 || types["detail"] < 8 || types["projects"] < 1 || types["list"]+types["detail"]+types["projects"] != len(rs) {
		t.Fatalf("mix proportions off: %v", types)
	}

	// Trace: statements and round trips per request type.
	mix, _ := MixFor(target.Meta)
	rows, err := TraceApp(ctx, rt, sh, TraceOptions{Requests: TraceRequests(target, mix, 10, 5, 1), Warmup: 2, Header: hdr, Weights: MixWeights(mix)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("trace rows %v", rows)
	}
	for _, r := range rows {
		t.Logf("%s: round trips %v statements %v parses %v pg_stat_statements %.1f/req", r.Type, r.RoundTrips, r.Statements, r.Parses, r.PGSS)
		if r.Failures != 0 || r.RoundTrips.Median < 1 || r.Statements.Median < 1 || r.PGSS < 1 {
			t.Errorf("%s: trace shows no database work: %+v", r.Type, r)
		}
	}
}
