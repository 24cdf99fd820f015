package engine_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// A member of a user's compose file keeps every setting it names: its
// entrypoint, user, folder, init, dropped capabilities, mounts in order
// by kind, health check and published port, which comes back as the
// address that reaches it.
func TestLabStartMemberComposeSettings(t *testing.T) {
	f, l := labWithNetwork(t)
	f.HostPort = "49153"
	m, err := l.StartMember(context.Background(), runtime.MemberSpec{
		Name: "rttlab-abc-app", Image: "rttlab/postgres:latest", Entrypoint: []string{"/bin/sh", "-c"}, User: "1000",
		WorkDir: "/srv", Init: true, CapDrop: []runtime.Capability{"CHOWN"},
		Mounts: []runtime.Mount{
			{Kind: runtime.MountBind, Source: "/h/a", Target: "/a", ReadOnly: true},
			{Kind: runtime.MountVolume, Target: "/data"},
			{Kind: runtime.MountTmpfs, Target: "/tmp"},
			{Kind: runtime.MountBind, Source: "/h/b", Target: "/b"},
			{Kind: runtime.MountTmpfs, Target: "/run", Source: "size=1m"},
		},
		Health:  &runtime.HealthCheck{Test: []string{"CMD", "true"}, Interval: time.Second, Retries: 3},
		Publish: []string{"8080/tcp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Published["8080/tcp"] != "127.0.0.1:49153" {
		t.Errorf("published %v", m.Published)
	}
	c := f.Created()[0]
	if !slices.Equal(c.Entrypoint, []string{"/bin/sh", "-c"}) || c.User != "1000" || c.WorkingDir != "/srv" || !c.Init ||
		!slices.Equal(c.CapDrop, []string{"CHOWN"}) || c.CapAdd != nil || !slices.Equal(c.PublishLocal, []string{"8080/tcp"}) {
		t.Errorf("spec %+v", c)
	}
	if !slices.Equal(c.Binds, []string{"/h/a:/a:ro", "/h/b:/b"}) || !slices.Equal(c.Volumes, []string{"/data"}) || !slices.Equal(c.Tmpfs, []string{"/tmp", "/run:size=1m"}) {
		t.Errorf("mounts: binds %v volumes %v tmpfs %v", c.Binds, c.Volumes, c.Tmpfs)
	}
	if want := (&container.HealthConfig{Test: []string{"CMD", "true"}, Interval: time.Second, Retries: 3}); !reflect.DeepEqual(c.Healthcheck, want) {
		t.Errorf("health check %+v", c.Healthcheck)
	}
}

// The members of a run are listed by label with their role, address and
// whether they run; an agent's namespace is its own container's on the
// fake, which does not report network modes.
func TestLabListMembers(t *testing.T) {
	f, l := labWithNetwork(t)
	ctx := context.Background()
	run := map[string]string{engine.LabelRun: "abc"}
	db, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-abc-db", Role: "db", Image: "rttlab/postgres:latest", Labels: run})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.NewLab(f, "").StartMember(ctx, runtime.MemberSpec{Name: "rttlab-xyz-db", Image: "rttlab/postgres:latest",
		Labels: map[string]string{engine.LabelRun: "xyz"}}); err != nil {
		t.Fatal(err)
	}
	f.Exit("rttlab-abc-db", 1, "")
	got, err := l.ListMembers(ctx, run)
	if err != nil || len(got) != 1 {
		t.Fatalf("run abc's members: %+v, %v", got, err)
	}
	if g := got[0]; g.ID != db.ID || g.Name != "rttlab-abc-db" || g.Role != "db" || g.Running || g.Labels[engine.LabelRun] != "abc" || g.NetNS != runtime.NetNS(db.ID) {
		t.Errorf("listed %+v", g)
	}
	if all, err := l.ListMembers(ctx, map[string]string{engine.LabelRun: ""}); err != nil || len(all) != 2 {
		t.Errorf("every run's: %+v, %v", all, err)
	}
	if n := engine.ContainerName(container.Summary{ID: "0123456789abcdef"}); n != "0123456789ab" {
		t.Errorf("nameless container named %q", n)
	}
}

// The run's network made through the runtime is the one its later
// members join; networks, volumes and images are listed and removed by
// label on the engine.
func TestLabNetworkVolumesImages(t *testing.T) {
	f := enginefake.New()
	f.AddImage("rttlab/agent:latest", map[string]string{engine.LabelApp: "agent"})
	ctx := context.Background()
	l := engine.NewLab(f, "")
	id, err := l.CreateNetwork(ctx, "rttlab-r1", map[string]string{engine.LabelRun: "r1"})
	if err != nil || id == "" || l.Network != "rttlab-r1" {
		t.Fatalf("network %q on %q: %v", id, l.Network, err)
	}
	if _, err := l.CreateNetwork(ctx, "rttlab-r1", nil); err == nil || l.Network != "rttlab-r1" {
		t.Errorf("a second network of the name: %v", err)
	}
	m, err := l.StartMember(ctx, runtime.MemberSpec{Name: "c", Image: "rttlab/agent:latest", Aliases: []string{"c"}})
	if err != nil || m.Addr == "" || f.Created()[0].Network != "rttlab-r1" {
		t.Errorf("member %+v on %q: %v", m, f.Created()[0].Network, err)
	}
	ns, err := l.ListNetworks(ctx, map[string]string{engine.LabelRun: ""})
	if err != nil || len(ns) != 1 || ns[0].ID != id || ns[0].Name != "rttlab-r1" || ns[0].Labels[engine.LabelRun] != "r1" {
		t.Fatalf("networks %+v, %v", ns, err)
	}
	if err := l.RemoveMember(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveNetwork(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ns, _ := l.ListNetworks(ctx, nil); len(ns) != 0 {
		t.Errorf("left %+v", ns)
	}
	f.AddVolume("v1", map[string]string{engine.LabelRun: "r1"})
	if vs, err := l.ListVolumes(ctx, map[string]string{engine.LabelRun: "r1"}); err != nil || !slices.Equal(vs, []string{"v1"}) {
		t.Errorf("volumes %v, %v", vs, err)
	}
	if err := l.RemoveVolume(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	if vs, _ := l.ListVolumes(ctx, nil); len(vs) != 0 {
		t.Errorf("left %v", vs)
	}
	if refs, err := l.RemoveImages(ctx, map[string]string{engine.LabelApp: ""}); err != nil || len(refs) != 1 {
		t.Errorf("images removed %v, %v", refs, err)
	}
}

// A host member is a container in network mode host or none, on no
// network, never inspected; the bridge of a network is br- and its ID's
// first 12 characters.
func TestLabStartHostMember(t *testing.T) {
	f, l := labWithNetwork(t)
	ctx := context.Background()
	for _, net := range []runtime.HostNet{runtime.OnHost, runtime.NoNet} {
		m, err := l.StartHostMember(ctx, runtime.MemberSpec{Name: "w-" + string(net), Role: "shaper", Image: "rttlab/agent:latest",
			Aliases: []string{"x"}, Beside: "y", DropAllCaps: true, CapAdd: []runtime.Capability{runtime.CapNetAdmin}}, net)
		if err != nil || m.ID == "" || m.Addr != "" {
			t.Fatalf("%s: %+v, %v", net, m, err)
		}
	}
	c := f.Created()
	if c[0].NetworkMode != "host" || c[1].NetworkMode != "none" || c[0].Network != "" || c[0].Aliases != nil ||
		c[0].Labels[engine.LabelRole] != "shaper" || !slices.Equal(c[0].CapDrop, []string{"ALL"}) {
		t.Errorf("created %+v", c)
	}
	if n := f.CountCalls("InspectContainer"); n != 0 {
		t.Errorf("%d inspections", n)
	}
	if _, err := l.StartHostMember(ctx, runtime.MemberSpec{Name: "gone", Image: "none:latest"}, runtime.OnHost); err == nil {
		t.Error("a member of a missing image started")
	}
	if b := l.Bridge("0123456789abcdef"); b != "br-0123456789ab" {
		t.Errorf("bridge %q", b)
	}
	if b := l.Bridge("abc"); b != "br-abc" {
		t.Errorf("bridge of a short ID %q", b)
	}
}
