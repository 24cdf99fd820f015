package stack

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
)

// A run whose owning process lives is in progress; one whose owner is
// gone (or whose pid now belongs to another process) is not. clean keeps
// the first and removes the others.
func TestLiveRunsAndCleanAllBut(t *testing.T) {
	ctx := context.Background()
	f := enginefake.New()
	parent := processOwner(os.Getppid())
	if parent == "" {
		t.Skip("no /proc here")
	}
	for run, owner := range map[string]string{
		"live1": parent,
		"dead1": "999999999:1",
		"reuse": strconv.Itoa(os.Getppid()) + ":1", // the pid lives, started at another time
		"mine":  processOwner(os.Getpid()),         // the cleaning process itself
		"old":   "",                                // a network from before owners were labelled
	} {
		l := RunLabels(run, nil)
		if owner != "" {
			l[LabelOwner] = owner
		}
		if _, err := f.CreateNetwork(ctx, "rttlab-"+run, l); err != nil {
			t.Fatal(err)
		}
	}
	live, err := LiveRuns(ctx, engine.NewLab(f, ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live["live1"] != os.Getppid() {
		t.Fatalf("live runs %v, want only live1 (pid %d)", live, os.Getppid())
	}
	c, err := CleanAllBut(ctx, engine.NewLab(f, ""), true, live)
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := f.ListNetworks(ctx, map[string]string{engine.LabelRun: ""})
	if c.Networks != 4 || len(ns) != 1 || ns[0].Labels[engine.LabelRun] != "live1" {
		t.Fatalf("removed %v; left %v, want only live1's network", c, ns)
	}
	if l := NetworkLabels("r1", nil); l[LabelOwner] != processOwner(os.Getpid()) || l[engine.LabelRun] != "r1" {
		t.Errorf("network labels %v", l)
	}
}
