package rtt

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt/raw"
)

// Two resumes of one folder never interleave: while the folder is held,
// a resume is refused before it touches the engine, and it goes through
// once the holder closes.
func TestRunFakeResumeRefusedWhileFolderHeld(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		dir := runFake(t, lab, fakePlan())
		held, err := raw.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		l := fakelab.NewOn(t, lab.Double())
		got, err := Run(context.Background(), l.Runtime(), l, l.Apps, RunOptions{Resume: dir, Now: fakeNow, NoPlots: fakelab.UnderRace})
		if !errors.Is(err, results.ErrLocked) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("resume of a held folder: err = %v, want ErrLocked naming %s", err, dir)
		}
		if got != "" {
			t.Errorf("returned folder %q", got)
		}
		if calls := l.Calls(); len(calls) != 0 || !l.Untouched() {
			t.Errorf("runtime used before the refusal: engine %v", calls)
		}
		if err := held.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), l.Runtime(), l, l.Apps, RunOptions{Resume: dir, Now: fakeNow, NoPlots: fakelab.UnderRace}); err != nil {
			t.Fatalf("resume after the holder closed: %v", err)
		}
		l.RequireEmpty(t)
	})
}
