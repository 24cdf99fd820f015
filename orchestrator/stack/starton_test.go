package stack

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/runtime/runtimefake"
)

// StartOn names and labels a member as StartMember does, asks the
// runtime for it under the service's name, and keeps the runtime's
// address and namespace; a member the runtime created but could not
// start is kept for removal.
func TestStartOn(t *testing.T) {
	r := runtimefake.New()
	r.AddImage("rttlab/pg:latest-arm64")
	st := &Stack{RunID: "abc", Platform: engine.Platform{OS: "linux", Arch: "arm64", EngineArch: "amd64"}}
	ctx := context.Background()
	m, err := st.StartOn(ctx, r, "db", "db", true, runtime.MemberSpec{Image: "rttlab/pg:latest-arm64", Env: []string{"A=1"}}, map[string]string{engine.LabelStack: "x"})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Started()[0]
	want := map[string]string{engine.LabelRun: "abc", engine.LabelStack: "x", engine.LabelRole: "db", engine.LabelService: "db"}
	if s.Name != "rttlab-abc-db" || s.Role != "db" || !reflect.DeepEqual(s.Labels, want) || !slices.Equal(s.Aliases, []string{"db"}) || s.Platform != "linux/arm64" {
		t.Errorf("spec %+v", s)
	}
	if m.Name != s.Name || m.Service != "db" || !m.Shaped || m.IP == "" || m.NetNS == "" || len(st.Members) != 1 {
		t.Errorf("member %+v", m)
	}
	boom := errors.New("boom")
	r.FailOn("StartMember", "rttlab-abc-app", boom)
	m, err = st.StartOn(ctx, r, "app", "app", true, runtime.MemberSpec{Image: "rttlab/pg:latest-arm64"}, nil)
	if !errors.Is(err, boom) || m == nil || len(st.Members) != 2 {
		t.Errorf("failed start: %+v %v, %d members", m, err, len(st.Members))
	}
	if m, err := st.StartOn(ctx, r, "x", "x", false, runtime.MemberSpec{Image: "none"}, nil); err == nil || m != nil || len(st.Members) != 2 {
		t.Errorf("nothing created: %+v %v", m, err)
	}
}
