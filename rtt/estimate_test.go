package rtt

import (
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
)

// The estimate follows what runs took on a 2-core host: the study's Go
// rows (180 tasks) 5 min, the whole study plan about an hour, the smoke
// plan a few minutes. It is a guide, so a factor of 1.6 either way is
// what it is held to.
func TestEstimateFollowsMeasuredRuns(t *testing.T) {
	all, err := apps.Load(apps.FS(""))
	if err != nil {
		t.Fatal(err)
	}
	study, _ := BuiltinPlan("study")
	goOnly, _ := BuiltinPlan("study")
	goOnly.Apps = []PlanApp{{Name: "go", Routes: []string{"/feed"}}}
	smoke, _ := BuiltinPlan("smoke")
	for _, c := range []struct {
		name     string
		p        *Plan
		measured time.Duration
	}{{"study, go", goOnly, 5 * time.Minute}, {"study", study, 60 * time.Minute}, {"smoke", smoke, 4 * time.Minute}} {
		got := c.p.Estimate(all)
		t.Logf("%s: %d tasks, estimate %s (%v), measured about %v", c.name, len(c.p.Tasks()), EstimateText(got), got.Round(time.Second), c.measured)
		if got < c.measured*10/16 || got > c.measured*16/10 {
			t.Errorf("%s: estimate %v, measured about %v", c.name, got, c.measured)
		}
	}
	for d, want := range map[time.Duration]string{30 * time.Second: "under a minute", 4*time.Minute + 20*time.Second: "about 4 min", 65 * time.Minute: "about 1 h 5 min", 2 * time.Hour: "about 2 h"} {
		if got := EstimateText(d); got != want {
			t.Errorf("EstimateText(%v) = %q, want %q", d, got, want)
		}
	}
}
