package fakelab

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/rttlab/rttlab/orchestrator/engine"
)

// Stub is an engine for unit tests of removal and waits: it lists the
// Containers and Networks it is given, records what is Removed, and
// reports every container Running or not; calling a method it does not
// have panics (the embedded Docker is nil).
type Stub struct {
	engine.Docker
	Containers []container.Summary
	Networks   []network.Summary
	RemoveErr  map[string]error // RemoveContainer fails for these ids
	Removed    []string
	Running    bool
}

func (f *Stub) ListContainers(context.Context, map[string]string) ([]container.Summary, error) {
	return f.Containers, nil
}

func (f *Stub) ListNetworks(context.Context, map[string]string) ([]network.Summary, error) {
	return f.Networks, nil
}

func (f *Stub) ListVolumes(context.Context, map[string]string) ([]string, error) {
	return nil, nil
}

func (f *Stub) StopContainer(context.Context, string, time.Duration) error { return nil }

func (f *Stub) RemoveContainer(_ context.Context, id string) error {
	if err := f.RemoveErr[id]; err != nil {
		return err
	}
	f.Removed = append(f.Removed, id)
	return nil
}

func (f *Stub) RemoveNetwork(_ context.Context, id string) error {
	f.Removed = append(f.Removed, id)
	return nil
}

func (f *Stub) CreateContainer(_ context.Context, spec engine.ContainerSpec) (string, error) {
	return "id-" + spec.Name, nil
}

func (f *Stub) StartContainer(context.Context, string) error { return nil }

func (f *Stub) Exec(context.Context, string, engine.ExecSpec) (int, error) {
	return 1, errors.New("exec: not in this test")
}

func (f *Stub) InspectContainer(_ context.Context, id string) (container.InspectResponse, error) {
	var r container.InspectResponse
	r.ContainerJSONBase = &container.ContainerJSONBase{ID: id, State: &container.State{Running: f.Running}}
	return r, nil
}

// HangingServer is an HTTP server whose every request hangs until the
// request's context ends or the test is over.
func HangingServer(t testing.TB) *httptest.Server {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) })
	return srv
}

// EndsWithContext runs f with a context that ends after 100 ms and fails
// the test unless f returns the context's error within a second of it.
func EndsWithContext(t testing.TB, name string, f func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: err = %v, want the context's", name, err)
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("%s returned %s after the context ended", name, el)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("%s still waiting 5 s after its context ended", name)
	}
}
