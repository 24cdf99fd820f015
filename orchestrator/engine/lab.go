package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"

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

var (
	_ runtime.Runtime      = (*Lab)(nil)
	_ runtime.Lister       = (*Lab)(nil)
	_ runtime.Network      = (*Lab)(nil)
	_ runtime.Volumes      = (*Lab)(nil)
	_ runtime.ImageRemover = (*Lab)(nil)
	_ runtime.WireHost     = (*Lab)(nil)
	_ runtime.Inspector    = (*Lab)(nil)
)

// NewLab is the Docker runtime of d whose members join network.
func NewLab(d Docker, network string) *Lab { return &Lab{D: d, Network: network} }

// helperGrace is how long an agent beside a member gets to undo its
// shaping when its run is removed.
const helperGrace = 3 * time.Second

// StartMember creates a container of s, starts it and, unless it is
// beside another member, inspects it for its address on the network.
func (l *Lab) StartMember(ctx context.Context, s runtime.MemberSpec) (runtime.Member, error) {
	if s.Node != "" {
		return runtime.Member{}, fmt.Errorf("member %s names node %s: Docker runs every member on this host; pin members to nodes with --runtime kube", s.Name, s.Node)
	}
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
		for _, p := range s.Publish {
			for _, b := range ins.NetworkSettings.Ports[nat.Port(p)] {
				if m.Published == nil {
					m.Published = map[string]string{}
				}
				m.Published[p] = net.JoinHostPort(b.HostIP, b.HostPort)
			}
		}
	}
	return m, nil
}

// containerSpec is the engine's container of s.
func (l *Lab) containerSpec(s runtime.MemberSpec) ContainerSpec {
	spec := ContainerSpec{
		Name:         s.Name,
		Image:        s.Image,
		Cmd:          s.Cmd,
		Entrypoint:   s.Entrypoint,
		User:         s.User,
		WorkingDir:   s.WorkDir,
		Init:         s.Init,
		Env:          s.Env,
		Labels:       maps.Clone(s.Labels),
		PublishLocal: s.Publish,
		NanoCPUs:     s.NanoCPUs,
		Platform:     platformOf(s.Platform),
		Healthcheck:  healthConfig(s.Health),
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
	for _, c := range s.CapDrop {
		spec.CapDrop = append(spec.CapDrop, string(c))
	}
	for _, mt := range s.Mounts {
		switch mt.Kind {
		case runtime.MountBind:
			b := mt.Source + ":" + mt.Target
			if mt.ReadOnly {
				b += ":ro"
			}
			spec.Binds = append(spec.Binds, b)
		case runtime.MountVolume:
			spec.Volumes = append(spec.Volumes, mt.Target)
		case runtime.MountTmpfs:
			t := mt.Target
			if mt.Source != "" {
				t += ":" + mt.Source
			}
			spec.Tmpfs = append(spec.Tmpfs, t)
		}
	}
	return spec
}

// healthConfig is the engine's health check of h; nil for none.
func healthConfig(h *runtime.HealthCheck) *container.HealthConfig {
	if h == nil {
		return nil
	}
	return &container.HealthConfig{Test: h.Test, Interval: h.Interval, Timeout: h.Timeout, StartPeriod: h.StartPeriod, Retries: h.Retries}
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
	if ins.State.Health != nil {
		st.Health = string(ins.State.Health.Status)
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
	// keep keeps an error of a listing or a removal and says whether
	// there was none.
	keep := func(err error) bool {
		if err != nil {
			errs = append(errs, err)
		}
		return err == nil
	}
	for _, agents := range []bool{true, false} {
		for _, c := range cs {
			if (c.Labels[LabelTarget] != "") != agents {
				continue
			}
			if agents && c.State == "running" {
				_ = l.D.StopContainer(ctx, c.ID, helperGrace)
			}
			if keep(l.D.RemoveContainer(ctx, c.ID)) {
				removed++
			}
		}
	}
	ns, err := l.D.ListNetworks(ctx, filter)
	keep(err)
	for _, n := range ns {
		if keep(l.D.RemoveNetwork(ctx, n.ID)) {
			removed++
		}
	}
	vs, err := l.D.ListVolumes(ctx, filter)
	keep(err)
	for _, v := range vs {
		if keep(l.D.RemoveVolume(ctx, v)) {
			removed++
		}
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

// ListMembers lists the containers that carry labels, by name: a
// container of another's network namespace has that one's ID for NetNS,
// and a container's address is its address on the lab's network.
func (l *Lab) ListMembers(ctx context.Context, labels map[string]string) ([]runtime.Listed, error) {
	cs, err := l.D.ListContainers(ctx, labels)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Listed, 0, len(cs))
	for _, c := range cs {
		m := runtime.Listed{
			Member:  runtime.Member{Name: ContainerName(c), Role: c.Labels[LabelRole], ID: c.ID, NetNS: runtime.NetNS(c.ID)},
			Labels:  c.Labels,
			Running: c.State == container.StateRunning,
			Status:  string(c.State),
		}
		if id, ok := strings.CutPrefix(c.HostConfig.NetworkMode, "container:"); ok {
			m.NetNS = runtime.NetNS(id)
		}
		if c.NetworkSettings != nil {
			if ep, ok := c.NetworkSettings.Networks[l.Network]; ok && ep != nil {
				m.Addr = ep.IPAddress
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// InspectMember inspects the container id for its environment and its
// address: on the lab's network, or, the lab naming none, on the network
// it is on.
func (l *Lab) InspectMember(ctx context.Context, id string) (runtime.MemberInfo, error) {
	ins, err := l.D.InspectContainer(ctx, id)
	if err != nil {
		return runtime.MemberInfo{}, err
	}
	var mi runtime.MemberInfo
	if ins.Config != nil {
		mi.Env = ins.Config.Env
	}
	if ins.NetworkSettings != nil {
		for name, ep := range ins.NetworkSettings.Networks {
			if ep != nil && (l.Network == "" || name == l.Network) {
				mi.Addr = ep.IPAddress
			}
		}
	}
	return mi, nil
}

// ContainerName is a listed container's name without its leading slash,
// or its short ID when it has none.
func ContainerName(c container.Summary) string {
	if len(c.Names) > 0 {
		return strings.TrimPrefix(c.Names[0], "/")
	}
	return ShortID(c.ID)
}

// CreateNetwork creates the bridge network name and has the members
// started after it join it.
func (l *Lab) CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error) {
	id, err := l.D.CreateNetwork(ctx, name, labels)
	if err == nil {
		l.Network = name
	}
	return id, err
}

// ListNetworks lists the networks that carry labels.
func (l *Lab) ListNetworks(ctx context.Context, labels map[string]string) ([]runtime.NetworkInfo, error) {
	ns, err := l.D.ListNetworks(ctx, labels)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.NetworkInfo, 0, len(ns))
	for _, n := range ns {
		out = append(out, runtime.NetworkInfo{ID: n.ID, Name: n.Name, Labels: n.Labels})
	}
	return out, nil
}

// RemoveNetwork removes the network id.
func (l *Lab) RemoveNetwork(ctx context.Context, id string) error { return l.D.RemoveNetwork(ctx, id) }

// ListVolumes lists the volumes that carry labels.
func (l *Lab) ListVolumes(ctx context.Context, labels map[string]string) ([]string, error) {
	return l.D.ListVolumes(ctx, labels)
}

// RemoveVolume removes the volume name.
func (l *Lab) RemoveVolume(ctx context.Context, name string) error {
	return l.D.RemoveVolume(ctx, name)
}

// RemoveImages removes the images that carry labels.
func (l *Lab) RemoveImages(ctx context.Context, labels map[string]string) ([]string, error) {
	return l.D.RemoveImages(ctx, labels)
}

// StartHostMember creates and starts a container of s in the network
// mode net (host or none); nothing is inspected.
func (l *Lab) StartHostMember(ctx context.Context, s runtime.MemberSpec, net runtime.HostNet) (runtime.Member, error) {
	s.Beside, s.Aliases = "", nil
	spec := l.containerSpec(s)
	spec.Network, spec.Aliases, spec.NetworkMode = "", nil, string(net)
	id, err := l.D.CreateContainer(ctx, spec)
	if err != nil {
		return runtime.Member{}, err
	}
	m := runtime.Member{Name: s.Name, Role: s.Role, ID: id}
	return m, l.D.StartContainer(ctx, id)
}

// Bridge is the name of the Linux bridge behind a Docker bridge network
// that rttlab created (no com.docker.network.bridge.name option): "br-"
// and the network ID's first 12 characters.
func (l *Lab) Bridge(networkID string) string {
	if networkID == "" {
		return ""
	}
	return "br-" + networkID[:min(12, len(networkID))]
}

var _ runtime.Copier = (*Lab)(nil)

// CopyTo extracts the tar archive tarball into the folder dir of the
// container id.
func (l *Lab) CopyTo(ctx context.Context, id, dir string, tarball io.Reader) error {
	return l.D.CopyToContainer(ctx, id, dir, tarball)
}
