package stack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

// A stack that does not start is removed whole, and the error says why.

// startFails starts a stack of the go app as run r1 and returns the
// error it fails with; the test fails when it starts.
func startFails(t *testing.T, l *fakelab.Lab, timeout time.Duration) error {
	t.Helper()
	st, err := StartStack(context.Background(), engine.NewLab(l, ""), StackOptions{RunID: "r1", Target: l.Target("go"), ReadyTimeout: timeout})
	if err == nil {
		t.Fatalf("stack %s started", st.RunID)
	}
	return err
}

// Each failure names what failed: the engine's error, the member that
// stopped with its log, the container whose image is missing, or what the
// app last answered; the containers created before it are removed.
func TestStartStackFailures(t *testing.T) {
	boom := errors.New("start: port is already allocated")
	for _, c := range []struct {
		name    string
		arrange func(l *fakelab.Lab)
		timeout time.Duration
		is      error  // the error wraps it, when set
		prefix  string // the error's message starts with it
		created int    // container creations tried
	}{
		{"member does not start", func(l *fakelab.Lab) { l.FailOn("StartContainer", "-app", 1, boom) }, 0, boom, "", 2},
		{"database exits", func(l *fakelab.Lab) { l.CrashOnStart("-db", 1, 1, "FATAL:  could not map anonymous shared memory\n") }, time.Minute,
			ErrContainerExited, "rttlab-r1-db: container exited (exit code 1); last log lines:\n    FATAL:  could not map", 1},
		{"app image missing", func(l *fakelab.Lab) { l.DropImage(engine.ImageRef("go")) }, 0, nil, "create rttlab-r1-app: image " + engine.ImageRef("go") + " is missing", 2},
		{"no network", func(l *fakelab.Lab) { l.FailOn("CreateNetwork", "rttlab-r1", 1, boom) }, 0, boom, "", 0},
		{"app never ready", func(l *fakelab.Lab) { l.Healthy.Store(false) }, 300 * time.Millisecond, nil,
			"app go (rttlab-r1-app) did not answer /health on port %d with 200 within 300ms (last: 503 Service Unavailable); last log lines:\n    (no output)", 2},
	} {
		l := fakelab.New(t)
		c.arrange(l)
		err := startFails(t, l, c.timeout)
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.is)
		}
		if prefix := strings.ReplaceAll(c.prefix, "%d", fmt.Sprint(l.Target("go").Meta.Port)); !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("%s: err = %q\nwant %q...", c.name, err, prefix)
		}
		if n := l.CountCalls("CreateContainer"); n != c.created {
			t.Errorf("%s: %d containers created, want %d", c.name, n, c.created)
		}
		l.RequireEmpty(t)
	}
}

// What the removal after a failed start leaves is reported with the
// failure itself.
func TestStartStackCleanupFails(t *testing.T) {
	l := fakelab.New(t)
	boom := errors.New("start: port is already allocated")
	l.FailOn("StartContainer", "-app", 1, boom)
	l.FailOn("RemoveContainer", "-db", 1, errors.New("device or resource busy"))
	err := startFails(t, l, 0)
	var ce *CleanupError
	if !errors.Is(err, boom) || !errors.As(err, &ce) || ce.RunID != "r1" || !strings.Contains(ce.Error(), "container rttlab-r1-db: device or resource busy") {
		t.Fatalf("err = %v", err)
	}
	if cs, ns := l.Live(); len(cs) != 1 || cs[0] != "rttlab-r1-db" || len(ns) != 1 {
		t.Errorf("left %v %v, want the database and its network", cs, ns)
	}
}
