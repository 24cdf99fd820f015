package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// Lab is the Docker runtime of the lab (runtime.Runtime) over a Docker
// engine: a member is a container on the run's bridge network, a member
// beside another a container in container:<id>, and a member's NetNS the
// ID of the container that owns its network namespace.
type Lab struct {
	D Docker
	// Network is the run's bridge network the members join under their
	// aliases; empty: the engine's default network.
	Network string
}

var _ runtime.Runtime = (*Lab)(nil)

// NewLab is the Docker runtime of d whose members join network.
func NewLab(d Docker, network string) *Lab { return &Lab{D: d, Network: network} }

// helperGrace is how long an agent beside a member gets to undo its
// shaping when its run is removed.
const helperGrace = 3 * time.Second

// StartMember creates a container of s, starts it and, unless it is
// beside another member, inspects it for its address on the network.
func (l *Lab) StartMember(ctx context.Context, s runtime.MemberSpec) (runtime.Member, error) {
	spec := l.containerSpec(s)
	id, err := l.D.CreateContainer(ctx, spec)
	if id == "" {
		return runtime.Member{}, err
	}
	m := runtime.Member{Name: s.Name, Role: s.Role, ID: id, NetNS: s.Beside}
	if m.NetNS == "" {
		m.NetNS = runtime.NetNS(id)
	}
	if err != nil {
		return m, err
	}
	if err := l.D.StartContainer(ctx, id); err != nil {
		return m, err
	}
	if s.Beside != "" {
		return m, nil // it answers on the address of the namespace it shares
	}
	ins, err := l.D.InspectContainer(ctx, id)
	if err != nil {
		return m, err
	}
	if ins.NetworkSettings != nil {
		if ep, ok := ins.NetworkSettings.Networks[l.Network]; ok && ep != nil {
			m.Addr = ep.IPAddress
		}
	}
	return m, nil
}

// containerSpec is the engine's container of s.
func (l *Lab) containerSpec(s runtime.MemberSpec) ContainerSpec {
	spec := ContainerSpec{
		Name:     s.Name,
		Image:    s.Image,
		Cmd:      s.Cmd,
		Env:      s.Env,
		Labels:   maps.Clone(s.Labels),
		NanoCPUs: s.NanoCPUs,
		Platform: platformOf(s.Platform),
	}
	if s.Role != "" {
		if spec.Labels == nil {
			spec.Labels = map[string]string{}
		}
		spec.Labels[LabelRole] = s.Role
	}
	if s.Beside != "" {
		spec.NetworkMode = "container:" + string(s.Beside)
	} else if l.Network != "" {
		spec.Network, spec.Aliases = l.Network, s.Aliases
	}
	if s.DropAllCaps {
		spec.CapDrop = []string{"ALL"}
	}
	for _, c := range s.CapAdd {
		spec.CapAdd = append(spec.CapAdd, string(c))
	}
	return spec
}

// platformOf is the Platform of "os/arch"; the zero Platform for "".
// The engine is asked for whatever it names: a platform it cannot run is
// its refusal to give.
func platformOf(s string) Platform {
	if s == "" {
		return Platform{}
	}
	goos, arch, _ := strings.Cut(s, "/")
	return Platform{OS: goos, Arch: arch}
}

// State inspects the container id.
func (l *Lab) State(ctx context.Context, id string) (runtime.State, error) {
	ins, err := l.D.InspectContainer(ctx, id)
	if err != nil {
		return runtime.State{}, err
	}
	if ins.ContainerJSONBase == nil || ins.State == nil {
		return runtime.State{}, fmt.Errorf("container %s: the engine reported no state", ShortID(id))
	}
	st := runtime.State{Running: ins.State.Running, ExitCode: ins.State.ExitCode, Reason: ins.State.Status}
	if ins.State.OOMKilled {
		st.Reason = "OOMKilled"
	}
	return st, nil
}

// StopMember stops the container id with a grace period.
func (l *Lab) StopMember(ctx context.Context, id string, grace time.Duration) error {
	return l.D.StopContainer(ctx, id, grace)
}

// RemoveMember force-removes the container id and its anonymous volumes.
func (l *Lab) RemoveMember(ctx context.Context, id string) error {
	return l.D.RemoveContainer(ctx, id)
}

// Exec runs a command in the container id.
func (l *Lab) Exec(ctx context.Context, id string, s runtime.ExecSpec) (int, error) {
	return l.D.Exec(ctx, id, s)
}

// Logs returns the last tail lines of the container id's output.
func (l *Lab) Logs(ctx context.Context, id string, tail int) (string, error) {
	return l.D.Logs(ctx, id, tail)
}

// RemoveRun removes the containers, networks and volumes labelled with
// the run: first the agents (the containers that name a target), stopped
// when running so that they undo their shaping, then the other
// containers, then the networks and the volumes.
func (l *Lab) RemoveRun(ctx context.Context, runID string) (int, error) {
	if runID == "" {
		return 0, errors.New("remove run: empty run id")
	}
	filter := map[string]string{LabelRun: runID}
	cs, err := l.D.ListContainers(ctx, filter)
	if err != nil {
		return 0, fmt.Errorf("remove run %s: %w", runID, err)
	}
	removed := 0
	var errs []error
	for _, agents := range []bool{true, false} {
		for _, c := range cs {
			if (c.Labels[LabelTarget] != "") != agents {
				continue
			}
			if agents && c.State == "running" {
				_ = l.D.StopContainer(ctx, c.ID, helperGrace)
			}
			if err := l.D.RemoveContainer(ctx, c.ID); err != nil {
				errs = append(errs, err)
				continue
			}
			removed++
		}
	}
	ns, err := l.D.ListNetworks(ctx, filter)
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range ns {
		if err := l.D.RemoveNetwork(ctx, n.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	vs, err := l.D.ListVolumes(ctx, filter)
	if err != nil {
		errs = append(errs, err)
	}
	for _, v := range vs {
		if err := l.D.RemoveVolume(ctx, v); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// HasImage says whether the engine has ref.
func (l *Lab) HasImage(ctx context.Context, ref string) (bool, error) {
	_, err := l.D.ImageID(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// EnsureImage has the engine hold ref, pulling it when absent; an image
// no registry gives is ErrNotFound.
func (l *Lab) EnsureImage(ctx context.Context, ref string) error {
	ok, err := l.HasImage(ctx, ref)
	if err != nil || ok {
		return err
	}
	if err := l.D.PullImage(ctx, ref); err != nil {
		return fmt.Errorf("image %s: %w: %w", ref, ErrNotFound, err)
	}
	return nil
}
