package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/workloads"
)

func TestAgentConnectOpenLoopCapacity(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Rttlab-Host", "a")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	code, out, errs := execLine(context.Background(), "agent", "connect", "--to", addr, "--warmup", "2", "--count", "5")
	var cr ConnectResult
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil || len(cr.Samples) != 5 || cr.Failures != 0 || cr.Samples[0] <= 0 {
		t.Errorf("connect: exit %d %q %q", code, out, errs)
	}

	code, out, errs = execLine(context.Background(), "agent", "openloop", "--url", srv.URL, "--rate", "200", "--count", "20", "--warmup", "2",
		"--path", "/feed?rttlab_policy=profiled", "--path", "/x", "--copy-header", "X-Rttlab-Host")
	rs, err := workloads.DecodeOpenResults(strings.NewReader(out))
	if code != 0 || err != nil || len(rs) != 20 {
		t.Fatalf("openloop: exit %d, %d results (%v): %s", code, len(rs), err, errs)
	}
	var tot workloads.OpenTotals
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &tot); err != nil || tot.Measured != 18 || tot.Warmup != 2 {
		t.Errorf("openloop totals %q: %v", errs, err)
	}
	paths := map[string]int{}
	for _, r := range rs {
		paths[r.Path]++
		if r.Tags["X-Rttlab-Host"] != "a" {
			t.Errorf("tags %v", r.Tags)
		}
	}
	if paths["/feed?rttlab_policy=profiled"] != 10 || paths["/x"] != 10 {
		t.Errorf("paths %v", paths)
	}

	code, out, errs = execLine(context.Background(), "agent", "capacity", "--url", srv.URL, "--path", "/x", "--count", "20",
		"--max-p99", "1s", "--start-rate", "50", "--max-rate", "100", "--max-trials", "3")
	var c workloads.Capacity
	if code != 0 || json.Unmarshal([]byte(out), &c) != nil || c.Rate <= 0 || len(c.Trials) == 0 {
		t.Errorf("capacity: exit %d %q %q", code, out, errs)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "connect"}, "--to HOST:PORT is required"},
		{[]string{"agent", "connect", "--to", "nocolon"}, `--to "nocolon"`},
		{[]string{"agent", "openloop", "--url", srv.URL, "--path", "/x"}, "--rate must be positive"},
		{[]string{"agent", "openloop", "--url", srv.URL, "--rate", "5"}, "give at least one --path"},
		{[]string{"agent", "openloop", "--url", srv.URL, "--rate", "5", "--path", "/x", "--count", "3", "--warmup", "3"}, "--warmup below it"},
		{[]string{"agent", "capacity", "--url", srv.URL, "--path", "/x"}, "--max-p99 must be positive"},
		{[]string{"agent", "proxy"}, "give --config FILE or --config-json JSON"},
	} {
		code, _, errs := execLine(context.Background(), tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d %q, want 2 with %q", tc.args, code, errs, tc.want)
		}
	}
	if code, _, errs := execLine(context.Background(), "agent", "proxy", "--config-json", `{"upstreams":[]}`); code == 0 || errs == "" {
		t.Errorf("proxy with no upstreams: exit %d %q", code, errs)
	}
}
