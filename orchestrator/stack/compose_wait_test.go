package stack

import (
	"context"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

// The depends_on conditions of a user's compose file, on the fake lab.

// waitingCompose is ShopCompose with a migration the app waits for to
// complete and a cache it waits for to be healthy.
var waitingCompose = strings.NewReplacer(
	"    depends_on: [pg, cache]\n",
	"    depends_on:\n      pg: {condition: service_started}\n      cache: {condition: service_healthy}\n      migrate: {condition: service_completed_successfully}\n",
	"  cache:\n",
	"  migrate:\n    image: example/migrate:1\n    depends_on: [pg]\n  cache:\n",
).Replace(fakelab.ShopCompose)

// inspected is the lab with a hook on every inspection of a container
// (by name), which may change what the inspection reports; it keeps the
// engine's calls at the moments the hook says so in marks.
type inspected struct {
	*fakelab.Lab
	hook  func(name string, n int, st *container.State) (mark string)
	mu    sync.Mutex
	seen  map[string]int
	marks map[string]int
}

func (d *inspected) InspectContainer(ctx context.Context, id string) (container.InspectResponse, error) {
	r, err := d.Lab.InspectContainer(ctx, id)
	if err != nil {
		return r, err
	}
	name := strings.TrimPrefix(r.Name, "/")
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen[name]++
	if mark := d.hook(name, d.seen[name], r.State); mark != "" {
		d.marks[mark] = len(d.Calls())
	}
	return r, nil
}

func (d *inspected) start(t *testing.T, timeout time.Duration) (*Stack, error) {
	t.Helper()
	d.seen, d.marks = map[string]int{}, map[string]int{}
	st, err := StartStack(context.Background(), engine.NewLab(d, ""), StackOptions{Target: composeTarget(t, d.Lab, waitingCompose), ReadyTimeout: timeout})
	if err == nil {
		t.Cleanup(func() { st.Remove(context.Background(), engine.NewLab(d, "")) })
	}
	return st, err
}

// The app is created once the migration has exited 0 and the cache
// reports healthy, not before; the finished migration is no crashed
// member.
func TestStartStackOwnComposeWaitsForDependencies(t *testing.T) {
	d := &inspected{Lab: fakelab.New(t)}
	d.hook = func(name string, n int, st *container.State) string {
		switch {
		case strings.HasSuffix(name, "-migrate") && n == 2:
			d.Exit("-migrate", 0, "migrated 12 tables\n")
			return "migrated"
		case strings.HasSuffix(name, "-cache") && n < 3:
			st.Health = &container.Health{Status: "starting"}
		case strings.HasSuffix(name, "-cache"):
			st.Health = &container.Health{Status: "healthy"}
			return "healthy"
		}
		return ""
	}
	st, err := d.start(t, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	web := slices.Index(d.Calls(), "CreateContainer rttlab-"+st.RunID+"-web")
	if d.marks["migrated"] == 0 || d.marks["healthy"] == 0 || web < d.marks["migrated"] || web < d.marks["healthy"] {
		t.Errorf("web created at call %d; migrated at %d, cache healthy at %d", web, d.marks["migrated"], d.marks["healthy"])
	}
	i := slices.IndexFunc(st.Members, func(m *Member) bool { return m.Service == "migrate" })
	if i < 0 || st.Members[i].Role != "service" {
		t.Fatalf("members %+v", st.Members)
	}
	if err := CheckRunning(context.Background(), engine.NewLab(d, ""), st.Members[i]); err != nil {
		t.Errorf("finished migration: %v", err)
	}
}

// A migration that fails stops the stack with its log; one that never
// ends, or a dependency never healthy, times the wait out by name.
func TestStartStackOwnComposeDependencyFails(t *testing.T) {
	for _, c := range []struct {
		name    string
		migrate int // the migration's exit code
		hook    func(name string, n int, st *container.State) string
		want    string
	}{
		{"migration exits 3", 3, func(name string, n int, st *container.State) string { return "" },
			"service migrate, which web waits for, exited 3; last log lines:\n    relation \"items\" already exists"},
		{"cache never healthy", 0, func(name string, n int, st *container.State) string {
			if strings.HasSuffix(name, "-cache") {
				st.Health = &container.Health{Status: "unhealthy"}
			}
			return ""
		}, "service web waited 300ms for cache to be healthy"},
	} {
		d := &inspected{Lab: fakelab.New(t), hook: c.hook}
		d.CrashOnStart("-migrate", 1, c.migrate, "relation \"items\" already exists\n")
		if _, err := d.start(t, 300*time.Millisecond); err == nil || err.Error() != c.want {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
		d.RequireEmpty(t)
	}
}
