package stack

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

func TestServiceOrderAndMeta(t *testing.T) {
	p, err := LoadStackFile(context.Background(), "feed.yaml", map[string]string{"RTTLAB_DB_PASSWORD": "pw", "RTTLAB_APP_IMAGE": "rttlab/go:latest"})
	if err != nil {
		t.Fatal(err)
	}
	order, err := serviceOrder(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0].Name != "db" || order[1].Name != "app" {
		t.Fatalf("order %v", order)
	}
	m, err := serviceMeta(order[1])
	if err != nil || m.Role != "app" || !m.Shaped {
		t.Fatalf("app meta %+v %v", m, err)
	}
	if v := order[1].Environment["PGPASSWORD"]; v == nil || *v != "pw" {
		t.Fatalf("password not interpolated: %v", v)
	}
	if order[1].Image != "rttlab/go:latest" {
		t.Fatalf("image %s", order[1].Image)
	}
	// Without a password the file refuses to load.
	if _, err := LoadStackFile(context.Background(), "feed.yaml", nil); err == nil || !strings.Contains(err.Error(), "RTTLAB_DB_PASSWORD") {
		t.Fatalf("missing password: %v", err)
	}
}

func TestNewPasswordFresh(t *testing.T) {
	a, b := NewPassword(), NewPassword()
	if a == b || len(a) < 32 {
		t.Fatalf("passwords %q %q", a, b)
	}
}

// What a stack's removal cannot remove is reported, by name, in one line.
func TestStackRemoveReportsWhatIsLeft(t *testing.T) {
	d := &fakelab.Stub{
		Containers: []container.Summary{
			{ID: "c1", Names: []string{"/rttlab-r1-app"}, Labels: map[string]string{engine.LabelRole: "app"}},
			{ID: "c2", Names: []string{"/rttlab-r1-db"}, Labels: map[string]string{engine.LabelRole: "db"}},
		},
		Networks:  []network.Summary{{ID: "n1", Name: "rttlab-r1"}},
		RemoveErr: map[string]error{"c2": errors.New("remove c2: device or resource busy")},
	}
	st := &Stack{RunID: "r1"}
	err := st.Remove(context.Background(), engine.NewLab(d, ""))
	var ce *CleanupError
	if !errors.As(err, &ce) || ce.RunID != "r1" {
		t.Fatalf("err = %v, want a CleanupError of run r1", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "rttlab-r1-db") || strings.Contains(msg, "rttlab-r1-app") || strings.Contains(msg, "\n") {
		t.Fatalf("message %q should name only what is left, on one line", msg)
	}
	if len(d.Removed) != 2 {
		t.Fatalf("removed %v, want the app container and the network", d.Removed)
	}
	d.RemoveErr = nil
	if err := st.Remove(context.Background(), engine.NewLab(d, "")); err != nil {
		t.Fatalf("clean removal: %v", err)
	}
}

// The readiness waits end as soon as the context does, even while a
// request to the app hangs.
func TestWaitsHonourContext(t *testing.T) {
	srv := fakelab.HangingServer(t)
	d := &fakelab.Stub{Running: true}
	m := &Member{ID: "app1", Name: "rttlab-x-app"}
	st := &Stack{AppURL: srv.URL, Target: apps.Target{Name: "go", Meta: &apps.Meta{Health: "/health"}}}
	fakelab.EndsWithContext(t, "WaitApp", func(ctx context.Context) error { return WaitApp(ctx, engine.NewLab(d, ""), st, m, time.Minute) })
	fakelab.EndsWithContext(t, "WaitDB", func(ctx context.Context) error { return WaitDB(ctx, engine.NewLab(d, ""), m, time.Minute) })
}

func TestRunLabels(t *testing.T) {
	l := RunLabels("r1", map[string]string{engine.LabelRole: "db"})
	if l[engine.LabelRun] != "r1" || l[engine.LabelRole] != "db" {
		t.Fatalf("RunLabels %v", l)
	}
}

// The waits for a stack's members take their limits through
// Platform.Limit: five times as long under emulation.
func TestStartLimit(t *testing.T) {
	native := engine.Platform{OS: "linux", Arch: "a", EngineArch: "a"}
	foreign := engine.Platform{OS: "linux", Arch: "b", EngineArch: "a"}
	for _, c := range []struct {
		p    engine.Platform
		d    time.Duration
		want time.Duration
	}{
		{engine.Platform{}, ReadyLimit, ReadyLimit},
		{native, ReadyLimit, ReadyLimit},
		{native, time.Minute, time.Minute},
		{foreign, ReadyLimit, 15 * time.Minute},
		{foreign, 2 * time.Minute, 10 * time.Minute},
	} {
		if got := c.p.Limit(c.d); got != c.want {
			t.Errorf("%+v.Limit(%v) = %v, want %v", c.p, c.d, got, c.want)
		}
	}
}
