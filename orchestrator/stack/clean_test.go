package stack

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

// clean --images removes what rttlab built, never a user's image that
// inherited rttlab's labels (FROM rttlab/go:latest).
func TestCleanImagesKeepsOwnImage(t *testing.T) {
	f := enginefake.New()
	f.AddImage(engine.ImageRef("go"), map[string]string{engine.LabelApp: "go"})
	own := f.AddImage("example/shop:1.4", map[string]string{engine.LabelApp: "go"})
	if _, err := CleanAll(context.Background(), engine.NewLab(f, ""), true); err != nil {
		t.Fatal(err)
	}
	if id, err := f.ImageID(context.Background(), "example/shop:1.4"); err != nil || id != own {
		t.Errorf("the user's image was removed: %v", err)
	}
	if _, err := f.ImageID(context.Background(), engine.ImageRef("go")); err == nil {
		t.Error("rttlab's image was kept")
	}
	for tags, want := range map[string]bool{"rttlab/go:latest": true, "rttlab-ci-go:latest": true, "": true, "<none>:<none>": true,
		"example/shop:1.4": false, "example/cargo:latest": false, "rttlab/go:latest,example/shop:1": false} {
		var ts []string
		if tags != "" {
			ts = strings.Split(tags, ",")
		}
		if got := engine.BuiltByRttlab(ts, map[string]string{engine.LabelApp: "go"}); got != want {
			t.Errorf("%q: %v, want %v", tags, got, want)
		}
	}
}

// helper creates a helper container of run with role, started or not,
// and returns its id.
func helper(t *testing.T, l *fakelab.Lab, run, role string, start bool) string {
	t.Helper()
	spec := engine.ContainerSpec{Name: "rttlab-" + run + "-" + role, Image: AgentImage, Labels: RunLabels(run, map[string]string{engine.LabelRole: role})}
	id, err := l.CreateContainer(context.Background(), spec)
	if err == nil && start {
		err = l.StartContainer(context.Background(), id)
	}
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A wire shaper that is not running (killed) left its rules in the host's
// tables: clean sweeps its run's, then every run's; a running one stops
// and removes its own. Helpers stop before the stacks go.
func TestCleanAllSweepsAStoppedShaper(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	st := started(t, l, StackOptions{Target: l.Target("go")})
	helper(t, l, "dead1", RoleShaper, false)
	live := helper(t, l, st.RunID, RoleShaper, true)
	c, err := CleanAll(ctx, engine.NewLab(l, ""), false)
	if err != nil {
		t.Fatal(err)
	}
	if sw := l.Sweeps(); !slices.Equal(sw, []string{"dead1/", ""}) {
		t.Errorf("sweeps %q, want the stopped shaper's run and then every run", sw)
	}
	if c != (Cleaned{Containers: 4, Networks: 1}) || c.String() != "4 container(s), 1 network(s), 0 volume(s)" {
		t.Errorf("cleaned %+v (%s)", c, c)
	}
	calls := l.Calls()
	stop, removed, db := slices.Index(calls, "StopContainer "+live), slices.Index(calls, "RemoveContainer "+live), slices.Index(calls, "RemoveContainer "+st.Role("db").ID)
	if l.CountCalls("StopContainer") != 1 || stop < 0 || stop > removed || removed > db {
		t.Errorf("want the running shaper stopped and removed before the database: %q", calls)
	}
	l.RequireEmpty(t)
}

// The rules of a killed shaper that a run's removal sweeps are counted,
// so that clean and down say what they removed.
func TestCleanRunCountsAStoppedShapersRules(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	rulesLeft(l, "dead1/app-out", "dead1/db-out", "other/app-out")
	helper(t, l, "dead1", RoleShaper, false)
	c, err := CleanRun(ctx, engine.NewLab(l, ""), "dead1")
	if err != nil || c != (Cleaned{Containers: 1, Rules: 2}) {
		t.Errorf("cleaned %+v %v, want the shaper and its run's two rules", c, err)
	}
	if c, err := CleanAll(ctx, engine.NewLab(l, ""), false); err != nil || c != (Cleaned{Rules: 1}) {
		t.Errorf("then every run's: %+v %v, want the other run's rule only", c, err)
	}
}

// CleanAll counts the rules every run's sweep removed, and reports a
// sweep that fails.
func TestCleanAllCountsAndReportsSweeps(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	rulesLeft(l, "r1/app-out", "r2/db-out")
	c, err := CleanAll(ctx, engine.NewLab(l, ""), false)
	if err != nil || c != (Cleaned{Rules: 2}) || c.String() != "0 container(s), 0 network(s), 0 volume(s), 2 shaping rule(s)" {
		t.Errorf("cleaned %+v (%s) %v", c, c, err)
	}
	l.FailOn("Exec", "agent sweep", 1, errors.New("exec: connection reset"))
	if _, err := CleanAll(ctx, engine.NewLab(l, ""), true); err == nil || err.Error() != "sweep wire rules: exec: connection reset" {
		t.Errorf("failing sweep: %v", err)
	}
	if _, err := l.ImageID(ctx, engine.ImageRef("go")); err != nil {
		t.Errorf("images removed after a failed sweep: %v", err)
	}
}

// What could not be removed is one line naming each object, and wraps
// their errors.
func TestCleanupError(t *testing.T) {
	busy := errors.New("container rttlab-r1-db: device or resource busy")
	e := &CleanupError{RunID: "r1", Err: errors.Join(busy, errors.New("network rttlab-r1: has active endpoints"))}
	if want := "run r1: could not remove everything: container rttlab-r1-db: device or resource busy; network rttlab-r1: has active endpoints"; e.Error() != want {
		t.Errorf("%q\nwant %q", e.Error(), want)
	}
	if !errors.Is(e, busy) {
		t.Error("the container's error is not wrapped")
	}
	c := Cleaned{Containers: 1, Networks: 2, Volumes: 3, Images: 4, Rules: 5}
	if c.String() != "1 container(s), 2 network(s), 3 volume(s), 5 shaping rule(s), 4 image(s)" {
		t.Errorf("%s", c)
	}
}
