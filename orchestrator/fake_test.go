package orchestrator

import (
	"context"
	"errors"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/rttlab/rttlab/orchestrator/engine"
)

// stubEngine is an engine for unit tests: the methods a test needs are
// funcs; calling any other method panics (the embedded Docker is nil).
type stubEngine struct {
	engine.Docker
	containers []container.Summary
	networks   []network.Summary
	removeErr  map[string]error // RemoveContainer fails for these ids
	removed    []string
	create     func(engine.ContainerSpec) (string, error)
	exec       func(ctx context.Context, id string, spec engine.ExecSpec) (int, error)
	running    bool
}

func (f *stubEngine) ListContainers(context.Context, map[string]string) ([]container.Summary, error) {
	return f.containers, nil
}

func (f *stubEngine) ListNetworks(context.Context, map[string]string) ([]network.Summary, error) {
	return f.networks, nil
}

func (f *stubEngine) ListVolumes(context.Context, map[string]string) ([]string, error) {
	return nil, nil
}

func (f *stubEngine) StopContainer(context.Context, string, time.Duration) error { return nil }

func (f *stubEngine) RemoveContainer(_ context.Context, id string) error {
	if err := f.removeErr[id]; err != nil {
		return err
	}
	f.removed = append(f.removed, id)
	return nil
}

func (f *stubEngine) RemoveNetwork(_ context.Context, id string) error {
	f.removed = append(f.removed, id)
	return nil
}

func (f *stubEngine) CreateContainer(_ context.Context, spec engine.ContainerSpec) (string, error) {
	if f.create != nil {
		return f.create(spec)
	}
	return "id-" + spec.Name, nil
}

func (f *stubEngine) StartContainer(context.Context, string) error { return nil }

func (f *stubEngine) Exec(ctx context.Context, id string, spec engine.ExecSpec) (int, error) {
	if f.exec != nil {
		return f.exec(ctx, id, spec)
	}
	return 1, errors.New("exec: not in this test")
}

func (f *stubEngine) InspectContainer(_ context.Context, id string) (container.InspectResponse, error) {
	var r container.InspectResponse
	r.ContainerJSONBase = &container.ContainerJSONBase{ID: id, State: &container.State{Running: f.running}}
	return r, nil
}
