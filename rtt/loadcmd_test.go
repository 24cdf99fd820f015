package rtt

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

// A task's load client line: its route, rttlab's mix by name or a user's
// mix as JSON with the run's seed, then the session's headers.
func TestLoadCmd(t *testing.T) {
	meta := &apps.Meta{Name: "go"}
	s := &appSession{st: &stack.Stack{Target: apps.Target{Meta: meta}}, base: "http://10.0.0.2:8080", header: []string{"Cookie: a=b"}}
	seed := fmt.Sprint(uint64(7) ^ stats.FNV64("go/run2"))
	own := &apps.Meta{Name: "shop", RequestMix: []workloads.MixRequest{{Name: "home", Path: "/", Weight: 1}}}
	for _, c := range []struct {
		meta *apps.Meta
		task raw.Task
		want string
	}{
		{meta, raw.Task{App: "go", Route: "/feed", Run: 2}, "--route /feed"},
		{meta, raw.Task{App: "go", Route: "mix:redmine", Run: 2}, "--mix redmine --seed " + seed},
		{own, raw.Task{App: "go", Route: "mix:shop", Run: 2}, `--mix-json [{"name":"home","path":"/","weight":1}] --seed ` + seed},
	} {
		s.st.Target.Meta = c.meta
		o, err := s.loadOptions(c.task, 7, 100, 20)
		if err != nil {
			t.Fatal(err)
		}
		cmd := agentclient.Call{Verb: "load", Args: agentclient.LoadArgs(o)}.Command()
		want := "/usr/local/bin/rttlab agent load --url http://10.0.0.2:8080 --warmup 20 --requests 100 " + c.want + " --header Cookie: a=b"
		if got := strings.Join(cmd, " "); got != want {
			t.Errorf("%s:\n got %s\nwant %s", c.task.Route, got, want)
		}
	}
}
