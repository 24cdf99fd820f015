package agentclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/workloads"
)

func TestOpenLoopArgs(t *testing.T) {
	got := strings.Join(OpenLoopArgs(workloads.OpenLoopOptions{
		BaseURL: "http://front:8080", Rate: 12.5, Count: 30, Warmup: 5, Seed: 7, Timeout: 10 * time.Second, NewConnPerRequest: true,
		CopyHeaders: []string{"X-A", "X-B"}, Header: map[string]string{"X-Rttlab-Policy": "jsq", "A": "1"},
		Requests: workloads.PathRequests("/work?cpu_ms=5&queries=1"),
	}), " ")
	want := "--url http://front:8080 --rate 12.5 --count 30 --warmup 5 --seed 7 --timeout 10s --new-conn --copy-header X-A --copy-header X-B --header A: 1 --header X-Rttlab-Policy: jsq --path /work?cpu_ms=5&queries=1"
	if got != want {
		t.Errorf("args\n got %s\nwant %s", got, want)
	}
	if got := strings.Join(CapacityArgs(CapacityOptions{URL: "http://a:80", Paths: []string{"/x"}, Count: 60, MaxP99: 20 * time.Millisecond, NewConn: true, Timeout: 5 * time.Second, Seed: 1, MaxTrials: 8}), " "); got != "--url http://a:80 --count 60 --max-p99 20ms --new-conn --timeout 5s --seed 1 --max-trials 8 --path /x" {
		t.Errorf("capacity args %s", got)
	}
	if got := strings.Join(LoadArgs(LoadOptions{URL: "http://a:80", Paths: []string{"/x", "/y"}, Warmup: 1, NewConn: true}), " "); got != "--url http://a:80 --warmup 1 --new-conn --path /x --path /y" {
		t.Errorf("load args %s", got)
	}
}

// client is a Client of a running container of a fake engine.
func client(t *testing.T) (*enginefake.Engine, Client) {
	t.Helper()
	f := enginefake.New()
	f.AddImage("agent:test", nil)
	ctx := context.Background()
	id, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "client", Image: "agent:test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return f, Client{D: f, ID: id}
}

// Each call decodes its verb's answer; a failed exit names the verb and
// stderr's last lines; a wrong count or an unreadable answer is an error;
// a member that died during the call fails it.
func TestClientCalls(t *testing.T) {
	f, c := client(t)
	ctx := context.Background()
	f.Handle("rttlab agent load", func(ctx context.Context, x *enginefake.Call) (int, error) {
		w := workloads.NewResultWriter(x.Stdout)
		for i, p := range x.Flags("--path") {
			w.Write(workloads.Result{Seq: i, Path: p, Status: 200, LatencyNS: 1e6})
		}
		return 0, nil
	})
	rs, err := c.Load(ctx, LoadOptions{URL: "http://a", Paths: []string{"/x", "/y"}})
	if err != nil || len(rs) != 2 || rs[1].Path != "/y" {
		t.Errorf("load: %+v %v", rs, err)
	}
	f.Handle("rttlab agent openloop", func(ctx context.Context, x *enginefake.Call) (int, error) {
		workloads.NewOpenResultWriter(x.Stdout).Write(workloads.OpenResult{Result: workloads.Result{Path: "/x", Status: 200}, Tags: map[string]string{"H": "a"}})
		b, _ := json.Marshal(workloads.OpenTotals{Sent: 1})
		fmt.Fprintf(x.Stderr, "a warning first\n%s\n", b)
		return 0, nil
	})
	ors, tot, err := c.OpenLoop(ctx, workloads.OpenLoopOptions{BaseURL: "http://a", Rate: 10, Count: 1, Requests: workloads.PathRequests("/x")}, time.Minute)
	if err != nil || len(ors) != 1 || ors[0].Tags["H"] != "a" || tot.Sent != 1 {
		t.Errorf("openloop: %+v %+v %v", ors, tot, err)
	}
	f.Handle("rttlab agent capacity", func(ctx context.Context, x *enginefake.Call) (int, error) {
		return 0, json.NewEncoder(x.Stdout).Encode(workloads.Capacity{Warning: "every trial failed"})
	})
	if _, err := c.Capacity(ctx, CapacityOptions{URL: "http://a"}, time.Minute); err == nil || err.Error() != "no rate was sustained (every trial failed)" {
		t.Errorf("capacity without a rate: %v", err)
	}
	f.Handle("rttlab agent connect", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprint(x.Stdout, `{"samples_ns":[100,200]}`)
		return 0, nil
	})
	if ns, err := c.Connect(ctx, "a:80", 1, 2); err != nil || len(ns) != 2 {
		t.Errorf("connect: %v %v", ns, err)
	}

	// Failures.
	f.Handle("rttlab agent load", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stderr, "one\ntwo\nthree\nrttlab: dial tcp: connection refused")
		return 1, nil
	})
	if _, err := c.Load(ctx, LoadOptions{URL: "http://a", Paths: []string{"/x"}}); err == nil || !strings.HasPrefix(err.Error(), "agent load exit 1:") || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "one") {
		t.Errorf("failed exit: %v", err)
	}
	f.Handle("rttlab agent load", func(ctx context.Context, x *enginefake.Call) (int, error) {
		workloads.NewResultWriter(x.Stdout).Write(workloads.Result{Path: "/x", Status: 200})
		return 0, nil
	})
	if _, err := c.Load(ctx, LoadOptions{URL: "http://a", Paths: []string{"/x", "/y"}}); err == nil || !strings.Contains(err.Error(), "returned 1 results, want 2") {
		t.Errorf("short answer: %v", err)
	}
	f.Handle("rttlab agent openloop", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stderr, "not totals")
		return 0, nil
	})
	if _, _, err := c.OpenLoop(ctx, workloads.OpenLoopOptions{BaseURL: "http://a", Rate: 1, Count: 1}, time.Minute); err == nil || !strings.HasPrefix(err.Error(), "open-loop totals:") {
		t.Errorf("no totals: %v", err)
	}
	dead := errors.New("container db exited (137)")
	c.Alive = func(context.Context) error { return dead }
	if _, err := c.Connect(ctx, "a:80", 0, 1); !errors.Is(err, dead) {
		t.Errorf("a member died: %v", err)
	}
}

// The load verb's line for a measured route, a named mix and a user's
// mix, with headers: the flags in one order, the seed with a mix only.
func TestLoadArgsOfARouteOrMix(t *testing.T) {
	for _, c := range []struct {
		o    LoadOptions
		want string
	}{
		{LoadOptions{URL: "http://a", Warmup: 5, Requests: 20, Route: "/feed"}, "--url http://a --warmup 5 --requests 20 --route /feed"},
		{LoadOptions{URL: "http://a", Warmup: 0, Requests: 3, Mix: "redmine", Seed: "9", Headers: []string{"A: b"}}, "--url http://a --warmup 0 --requests 3 --mix redmine --seed 9 --header A: b"},
		{LoadOptions{URL: "http://a", Warmup: 1, Requests: 2, MixJSON: `[{"path":"/x"}]`, Seed: "4", Headers: []string{"A: b", "C: d"}}, `--url http://a --warmup 1 --requests 2 --mix-json [{"path":"/x"}] --seed 4 --header A: b --header C: d`},
	} {
		if got := strings.Join(LoadArgs(c.o), " "); got != c.want {
			t.Errorf("LoadArgs(%+v) = %q, want %q", c.o, got, c.want)
		}
	}
}
