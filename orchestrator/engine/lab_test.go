package engine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// labWithNetwork is a fake engine with the agent image and the run's
// network, and the Docker runtime of it.
func labWithNetwork(t *testing.T) (*enginefake.Engine, *engine.Lab) {
	t.Helper()
	f := enginefake.New()
	f.AddImage("rttlab/agent:latest", nil)
	f.AddImage("rttlab/postgres:latest", nil)
	if _, err := f.CreateNetwork(context.Background(), "rttlab-abc", map[string]string{engine.LabelRun: "abc"}); err != nil {
		t.Fatal(err)
	}
	return f, engine.NewLab(f, "rttlab-abc")
}

// A member is a container on the run's network under its aliases, with
// its role among its labels; its address is read back, and its network
// namespace is its own container.
func TestLabStartMember(t *testing.T) {
	f, l := labWithNetwork(t)
	ctx := context.Background()
	spec := runtime.MemberSpec{
		Name: "rttlab-abc-db", Role: "db", Image: "rttlab/postgres:latest",
		Cmd: []string{"postgres"}, Env: []string{"A=1"},
		Labels:  map[string]string{engine.LabelRun: "abc"},
		Aliases: []string{"db"}, Platform: "linux/arm64", NanoCPUs: 500_000_000,
	}
	m, err := l.StartMember(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID == "" || m.Name != "rttlab-abc-db" || m.Role != "db" || !strings.HasPrefix(m.Addr, "10.89.0.") || m.Node != "" || m.NetNS != runtime.NetNS(m.ID) {
		t.Errorf("member %+v", m)
	}
	if spec.Labels[engine.LabelRole] != "" {
		t.Error("StartMember wrote into the caller's labels")
	}
	created := f.Created()
	if len(created) != 1 {
		t.Fatalf("created %d containers", len(created))
	}
	c := created[0]
	want := engine.ContainerSpec{
		Name: "rttlab-abc-db", Image: "rttlab/postgres:latest", Cmd: []string{"postgres"}, Env: []string{"A=1"},
		Labels:  map[string]string{engine.LabelRun: "abc", engine.LabelRole: "db"},
		Network: "rttlab-abc", Aliases: []string{"db"}, NanoCPUs: 500_000_000,
		Platform: engine.Platform{OS: "linux", Arch: "arm64"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("container\n %+v, want\n %+v", c, want)
	}
	if got, want := f.Calls()[1:], []string{"CreateContainer rttlab-abc-db", "StartContainer " + m.ID, "InspectContainer " + m.ID}; !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
}

// An agent beside a member shares its network namespace
// (container:<id>), with only the capabilities it asks for, and is not
// inspected: it answers on its target's address.
func TestLabStartBeside(t *testing.T) {
	f, l := labWithNetwork(t)
	ctx := context.Background()
	db, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-abc-db", Image: "rttlab/postgres:latest"})
	if err != nil {
		t.Fatal(err)
	}
	n := len(f.Calls())
	a, err := l.StartMember(ctx, runtime.MemberSpec{
		Name: "rttlab-abc-db-agent", Role: "agent", Image: "rttlab/agent:latest", Cmd: []string{"agent", "idle"},
		Beside: db.NetNS, CapAdd: []runtime.Capability{runtime.CapNetAdmin, runtime.CapNetRaw}, DropAllCaps: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if a.Addr != "" || a.NetNS != db.NetNS || a.ID == db.ID {
		t.Errorf("agent %+v beside %+v", a, db)
	}
	c := f.Created()[1]
	if c.NetworkMode != "container:"+db.ID || c.Network != "" || len(c.Aliases) != 0 ||
		!slices.Equal(c.CapDrop, []string{"ALL"}) || !slices.Equal(c.CapAdd, []string{"NET_ADMIN", "NET_RAW"}) {
		t.Errorf("agent container %+v", c)
	}
	if got := f.Calls()[n:]; len(got) != 2 || !strings.HasPrefix(got[1], "StartContainer ") {
		t.Errorf("calls %q: create and start only", got)
	}
	// Beside a member that is gone, nothing is created.
	if err := l.RemoveMember(ctx, db.ID); err != nil {
		t.Fatal(err)
	}
	if m, err := l.StartMember(ctx, runtime.MemberSpec{Name: "late", Image: "rttlab/agent:latest", Beside: db.NetNS}); err == nil || m.ID != "" {
		t.Errorf("beside a removed member: %+v, %v", m, err)
	}
}

// Docker runs every member on its one host: a member pinned to a node is
// refused in one line before anything is created.
func TestLabStartRefusesANode(t *testing.T) {
	f, l := labWithNetwork(t)
	m, err := l.StartMember(context.Background(), runtime.MemberSpec{Name: "rttlab-abc-db", Image: "rttlab/postgres:latest", Node: "worker-2"})
	want := "member rttlab-abc-db names node worker-2: Docker runs every member on this host; pin members to nodes with --runtime kube"
	if err == nil || err.Error() != want || m.ID != "" {
		t.Errorf("StartMember = %+v, %v; want %q", m, err, want)
	}
	if c := f.Created(); len(c) != 0 {
		t.Errorf("created %d containers", len(c))
	}
}

// A member that was created but did not start comes back with its ID,
// so that the caller removes it.
func TestLabStartFails(t *testing.T) {
	f, l := labWithNetwork(t)
	ctx := context.Background()
	boom := errors.New("boom")
	f.FailOn("StartContainer", "-db", 1, boom)
	m, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-abc-db", Image: "rttlab/postgres:latest"})
	if !errors.Is(err, boom) || m.ID == "" {
		t.Fatalf("start failure: %+v, %v", m, err)
	}
	if err := l.RemoveMember(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if m, err := l.StartMember(ctx, runtime.MemberSpec{Name: "x", Image: "none:latest"}); err == nil || m.ID != "" {
		t.Errorf("missing image: %+v, %v", m, err)
	}
	if cs, _ := f.Live(); len(cs) != 0 {
		t.Errorf("left %v", cs)
	}
}

// State follows the container: running, exited with its code, gone.
func TestLabState(t *testing.T) {
	f, l := labWithNetwork(t)
	ctx := context.Background()
	m, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-abc-app", Image: "rttlab/agent:latest"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := l.State(ctx, m.ID); err != nil || !st.Running || st.Reason != "running" {
		t.Errorf("running: %+v, %v", st, err)
	}
	f.Exit("-app", 3, "panic\n")
	if st, err := l.State(ctx, m.ID); err != nil || st.Running || st.ExitCode != 3 || st.Reason != "exited" {
		t.Errorf("exited: %+v, %v", st, err)
	}
	if logs, err := l.Logs(ctx, m.ID, 5); err != nil || logs != "panic" {
		t.Errorf("logs %q, %v", logs, err)
	}
	if err := l.StopMember(ctx, m.ID, 0); err != nil {
		t.Errorf("stop of an exited member: %v", err)
	}
	if err := l.RemoveMember(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.State(ctx, m.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("gone: %v, want runtime.ErrNotFound", err)
	}
}

// Exec goes to the member's container with the runtime's ExecSpec.
func TestLabExec(t *testing.T) {
	f, l := labWithNetwork(t)
	ctx := context.Background()
	f.Handle("echo", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stdout, strings.Join(x.Cmd[1:], " "))
		return 4, nil
	})
	m, err := l.StartMember(ctx, runtime.MemberSpec{Name: "c", Image: "rttlab/agent:latest"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	code, err := l.Exec(ctx, m.ID, runtime.ExecSpec{Cmd: []string{"echo", "hi"}, Stdout: &out})
	if err != nil || code != 4 || out.String() != "hi\n" {
		t.Errorf("exec: %d %q %v", code, out.String(), err)
	}
}

// RemoveRun stops and removes the agents first, then the members, the
// network and the volumes of the run, and leaves other runs alone.
func TestLabRemoveRun(t *testing.T) {
	f, l := labWithNetwork(t)
	ctx := context.Background()
	run := map[string]string{engine.LabelRun: "abc"}
	db, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-abc-db", Image: "rttlab/postgres:latest", Labels: run})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-abc-db-agent", Role: "agent", Image: "rttlab/agent:latest",
		Labels: map[string]string{engine.LabelRun: "abc", engine.LabelTarget: db.ID}, Beside: db.NetNS})
	if err != nil {
		t.Fatal(err)
	}
	other, err := engine.NewLab(f, "").StartMember(ctx, runtime.MemberSpec{Name: "rttlab-xyz-db", Image: "rttlab/postgres:latest",
		Labels: map[string]string{engine.LabelRun: "xyz"}})
	if err != nil {
		t.Fatal(err)
	}
	f.AddVolume("rttlab-abc-data", run)
	n0 := len(f.Calls())
	n, err := l.RemoveRun(ctx, "abc")
	if err != nil || n != 4 {
		t.Fatalf("removed %d, %v; want 4 (two containers, the network, the volume)", n, err)
	}
	var order []string
	for _, c := range f.Calls()[n0:] {
		if op, _, _ := strings.Cut(c, " "); op == "StopContainer" || op == "RemoveContainer" {
			order = append(order, c)
		}
	}
	if want := []string{"StopContainer " + agent.ID, "RemoveContainer " + agent.ID, "RemoveContainer " + db.ID}; !slices.Equal(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
	cs, ns := f.Live()
	if !slices.Equal(cs, []string{"rttlab-xyz-db"}) || len(ns) != 0 {
		t.Errorf("left %v %v", cs, ns)
	}
	if vs, _ := f.ListVolumes(ctx, run); len(vs) != 0 {
		t.Errorf("volumes left %v", vs)
	}
	if err := l.RemoveMember(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RemoveRun(ctx, ""); err == nil {
		t.Error("an empty run id removes nothing: want an error")
	}
	boom := errors.New("boom")
	f.FailOn("ListContainers", "", 1, boom)
	if _, err := l.RemoveRun(ctx, "abc"); !errors.Is(err, boom) {
		t.Errorf("list failure: %v", err)
	}
}

// HasImage and EnsureImage: present, pulled, or ErrNotFound.
func TestLabImages(t *testing.T) {
	f, l := labWithNetwork(t)
	ctx := context.Background()
	if ok, err := l.HasImage(ctx, "rttlab/agent:latest"); !ok || err != nil {
		t.Errorf("present: %v %v", ok, err)
	}
	if ok, err := l.HasImage(ctx, "postgres:17"); ok || err != nil {
		t.Errorf("absent: %v %v", ok, err)
	}
	if err := l.EnsureImage(ctx, "rttlab/agent:latest"); err != nil || f.CountCalls("PullImage") != 0 {
		t.Errorf("present: %v, %d pulls", err, f.CountCalls("PullImage"))
	}
	if err := l.EnsureImage(ctx, "postgres:17"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("nowhere: %v, want ErrNotFound", err)
	}
	f.Pullable["postgres:17"] = true
	if err := l.EnsureImage(ctx, "postgres:17"); err != nil {
		t.Errorf("pullable: %v", err)
	}
	if ok, _ := l.HasImage(ctx, "postgres:17"); !ok {
		t.Error("pulled image absent")
	}
	boom := errors.New("boom")
	f.FailOn("ImageID", "", 1, boom)
	if _, err := l.HasImage(ctx, "x"); !errors.Is(err, boom) {
		t.Errorf("inspect failure: %v", err)
	}
}
