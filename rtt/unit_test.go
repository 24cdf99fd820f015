package rtt

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

// Library errors say what happened; what to run about it (make targets,
// rttlab commands, flags) is the command line's to add.
func TestLibraryErrorsAreFactual(t *testing.T) {
	cliWords := []string{"make ", "`", "rttlab ", "--", "sudo"}
	var errs []error
	errs = append(errs, engine.ErrNoEngine, engine.ErrEngineDenied, engine.ErrImageMissing, engine.ErrNoDebootstrap, engine.ErrNeedRoot, shaping.ErrAgentStopped)
	for _, s := range []string{"", ",", "0,abc"} {
		_, err := ParseDelaysMs(s)
		errs = append(errs, err)
	}
	p := &Plan{DelaysMs: []float64{0}, Runs: 1, Requests: 1}
	p.Defaults()
	errs = append(errs, p.Validate())
	for _, err := range errs {
		for _, w := range cliWords {
			if err == nil || strings.Contains(err.Error(), w) {
				t.Errorf("%q gives command-line advice (%q)", err, w)
			}
		}
	}
}

// Every field the load client reports about a request reaches the sample,
// the re-sent flag included.
func TestTaskSamplesKeepEverything(t *testing.T) {
	task := raw.Task{ID: 7, App: "go", Route: "/feed", RTTms: 0.5, Run: 3}
	rs := []workloads.Result{
		{Seq: 0, Warmup: true, Path: "/feed", LatencyNS: 10, Status: 200, Bytes: 5},
		{Seq: 1, Path: "/feed", LatencyNS: 20, Status: 200, Bytes: 6, Retried: true},
		{Seq: 2, Path: "/feed", LatencyNS: 30, Status: 0, Error: "reset"},
	}
	got := taskSamples(task, 2, rs)
	want := []raw.Sample{
		{Task: 7, Attempt: 2, App: "go", Route: "/feed", RTTms: 0.5, Run: 3, Seq: 0, Warmup: true, LatencyNS: 10, Status: 200, Bytes: 5},
		{Task: 7, Attempt: 2, App: "go", Route: "/feed", RTTms: 0.5, Run: 3, Seq: 1, LatencyNS: 20, Status: 200, Bytes: 6, Retried: true},
		{Task: 7, Attempt: 2, App: "go", Route: "/feed", RTTms: 0.5, Run: 3, Seq: 2, LatencyNS: 30, Error: "reset"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("samples\n got %+v\nwant %+v", got, want)
	}
}
