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
	st, err := StartStack(context.Background(), l, StackOptions{RunID: "r1", Target: l.Target("go"), ReadyTimeout: timeout})
	if err == nil {
		t.Fatalf("stack %s started", st.RunID)
	}
	return err
}

func TestStartStackMemberDoesNotStart(t *testing.T) {
	l := fakelab.New(t)
	boom := errors.New("start: port is already allocated")
	l.FailOn("StartContainer", "-app", 1, boom)
	if err := startFails(t, l, 0); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the engine's", err)
	}
	l.RequireEmpty(t)
}

func TestStartStackDatabaseExits(t *testing.T) {
	l := fakelab.New(t)
	l.CrashOnStart("-db", 1, 1, "FATAL:  could not map anonymous shared memory\n")
	err := startFails(t, l, time.Minute)
	if !errors.Is(err, ErrContainerExited) || !strings.HasPrefix(err.Error(), "rttlab-r1-db: container exited (exit code 1); last log lines:\n    FATAL:  could not map") {
		t.Errorf("err = %v", err)
	}
	if n := l.CountCalls("CreateContainer"); n != 1 {
		t.Errorf("%d containers created after the database stopped, want the database's only", n)
	}
	l.RequireEmpty(t)
}

func TestStartStackAppImageMissing(t *testing.T) {
	l := fakelab.New(t)
	l.DropImage(engine.ImageRef("go"))
	err := startFails(t, l, 0)
	if msg := err.Error(); !strings.Contains(msg, "create rttlab-r1-app") || !strings.Contains(msg, engine.ImageRef("go")) {
		t.Errorf("err = %v, want the app's container and image named", err)
	}
	l.RequireEmpty(t)
}

func TestStartStackNetworkFails(t *testing.T) {
	l := fakelab.New(t)
	boom := errors.New("could not find an available, non-overlapping IPv4 address pool")
	l.FailOn("CreateNetwork", "rttlab-r1", 1, boom)
	if err := startFails(t, l, 0); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	if n := l.CountCalls("CreateContainer"); n != 0 {
		t.Errorf("%d containers created without a network", n)
	}
	l.RequireEmpty(t)
}

// An app that never answers 200: the error says what it waited for and
// what the app last answered, and ends with its (empty) log.
func TestStartStackAppNeverReady(t *testing.T) {
	l := fakelab.New(t)
	l.Healthy.Store(false)
	err := startFails(t, l, 300*time.Millisecond)
	want := fmt.Sprintf("app go (rttlab-r1-app) did not answer /health on port %d with 200 within 300ms (last: 503 Service Unavailable); last log lines:\n    (no output)",
		l.Target("go").Meta.Port)
	if err.Error() != want {
		t.Errorf("err = %q\nwant %q", err, want)
	}
	l.RequireEmpty(t)
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
