// Package engine is rttlab's side of the Docker Engine API: the runtime
// wrapper, images (base image, builds of every app, labels), the Go
// toolchain the builds use, the module embedded in the binary, doctor's
// checks of the host, and the helpers that cut command output for
// messages (FirstLine, LastLines, Truncate).
//
// The Docker wrapper follows the role-interface style: each consumer asks
// for the narrow interface it uses (ImageStore, Containers, Networks,
// Engine), and *Runtime implements all of them over the Engine API client
// with API version negotiation, so it works with Debian's engine 20.10
// (API 1.41) and with current engines.
package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// Labels carried by every object rttlab creates.
const (
	LabelRun     = runtime.LabelRun    // run id, on containers, networks, volumes
	LabelApp     = "io.rttlab.app"     // app name, on images and app containers
	LabelRole    = runtime.LabelRole   // db, app, agent, client
	LabelService = "io.rttlab.service" // compose service name
	LabelStack   = "io.rttlab.stack"   // "up" for stacks started by `rttlab up`
	LabelTarget  = "io.rttlab.target"  // on agents: the container they shape
)

// RoleOnce is the LabelRole of a short-lived container that answers one
// question (the kernel netem probe, a rule sweep) and is gone after it.
const RoleOnce = "once"

// Default timeouts for engine calls. Every call gets a context with one.
const (
	shortCall = 30 * time.Second
	longCall  = 30 * time.Minute // image builds and imports
)

// ErrNoEngine is returned when no Docker engine answers.
var ErrNoEngine = errors.New("no Docker engine answers")

// ErrEngineDenied is returned (with ErrNoEngine) when the engine's socket
// refuses this user.
var ErrEngineDenied = errors.New("permission denied")

// ErrImageMissing is returned when a container's image does not exist.
var ErrImageMissing = errors.New("image is missing")

// ErrNotFound is returned when a named object does not exist: the
// runtime's own, so that errors.Is answers alike through either.
var ErrNotFound = runtime.ErrNotFound

// Engine reports on the engine itself.
type Engine interface {
	EngineInfo(ctx context.Context) (EngineInfo, error)
}

// ImageStore finds, pulls, imports, builds and removes images.
type ImageStore interface {
	ImageID(ctx context.Context, ref string) (string, error) // ErrNotFound when absent
	PullImage(ctx context.Context, ref string) error
	ImportImage(ctx context.Context, tarball io.Reader, ref string) error
	BuildImage(ctx context.Context, tarCtx io.Reader, opts BuildOptions) (BuildResult, error)
	RemoveImages(ctx context.Context, labelFilter map[string]string) ([]string, error)
}

// Containers creates, starts, inspects, execs into and removes containers.
type Containers interface {
	CreateContainer(ctx context.Context, spec ContainerSpec) (string, error)
	StartContainer(ctx context.Context, id string) error
	InspectContainer(ctx context.Context, id string) (container.InspectResponse, error)
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	KillContainer(ctx context.Context, id, signal string) error
	RemoveContainer(ctx context.Context, id string) error
	ListContainers(ctx context.Context, labelFilter map[string]string) ([]container.Summary, error)
	Exec(ctx context.Context, id string, spec ExecSpec) (int, error)
	Logs(ctx context.Context, id string, tail int) (string, error)
	// CopyToContainer extracts a tar archive into the folder dir of a
	// container (the database's init files).
	CopyToContainer(ctx context.Context, id, dir string, tarball io.Reader) error
}

// Networks creates and removes private networks.
type Networks interface {
	CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error)
	RemoveNetwork(ctx context.Context, id string) error
	ListNetworks(ctx context.Context, labelFilter map[string]string) ([]network.Summary, error)
}

// Volumes lists and removes volumes.
type Volumes interface {
	ListVolumes(ctx context.Context, labelFilter map[string]string) ([]string, error)
	RemoveVolume(ctx context.Context, name string) error
}

// Docker is everything rttlab's stacks and studies need from an engine.
type Docker interface {
	Engine
	ImageStore
	Containers
	Networks
	Volumes
}

// EngineInfo describes the engine for manifests and doctor.
type EngineInfo struct {
	Version    string
	APIVersion string // negotiated
	OS, Arch   string
	Kernel     string
	CPUs       int
	MemBytes   int64
	Root       string
}

// Runtime implements Docker over the Engine API client.
type Runtime struct {
	cli *client.Client
}

var _ Docker = (*Runtime)(nil)

// NewRuntime connects to the engine named by the environment (DOCKER_HOST
// or the default socket), negotiates the API version and checks that the
// engine answers. It returns an error wrapping ErrNoEngine when none does.
func NewRuntime(ctx context.Context) (*Runtime, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		if strings.Contains(err.Error(), "permission denied") {
			return nil, fmt.Errorf("%w: %w on %s", ErrNoEngine, ErrEngineDenied, cli.DaemonHost())
		}
		return nil, fmt.Errorf("%w (%s: %v)", ErrNoEngine, cli.DaemonHost(), FirstLine(err.Error()))
	}
	cli.NegotiateAPIVersion(pctx)
	return &Runtime{cli: cli}, nil
}

// Close releases the client.
func (r *Runtime) Close() error { return r.cli.Close() }

// EngineInfo returns versions and host facts.
func (r *Runtime) EngineInfo(ctx context.Context) (EngineInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	v, err := r.cli.ServerVersion(ctx)
	if err != nil {
		return EngineInfo{}, fmt.Errorf("engine version: %w", err)
	}
	info, err := r.cli.Info(ctx)
	if err != nil {
		return EngineInfo{}, fmt.Errorf("engine info: %w", err)
	}
	return EngineInfo{
		Version:    v.Version,
		APIVersion: r.cli.ClientVersion(),
		OS:         v.Os,
		Arch:       v.Arch,
		Kernel:     v.KernelVersion,
		CPUs:       info.NCPU,
		MemBytes:   info.MemTotal,
		Root:       info.DockerRootDir,
	}, nil
}

func labelArgs(labelFilter map[string]string) filters.Args {
	args := filters.NewArgs()
	for k, v := range labelFilter {
		if v == "" {
			args.Add("label", k)
		} else {
			args.Add("label", k+"="+v)
		}
	}
	return args
}

// ImageID returns the ID of ref, or ErrNotFound.
func (r *Runtime) ImageID(ctx context.Context, ref string) (string, error) {
	img, err := r.inspectImage(ctx, ref)
	return img.ID, err
}

// ImagePlatform returns the platform ref is labelled with ("os/arch"),
// or ErrNotFound.
func (r *Runtime) ImagePlatform(ctx context.Context, ref string) (string, error) {
	img, err := r.inspectImage(ctx, ref)
	if err != nil {
		return "", err
	}
	return img.Os + "/" + img.Architecture, nil
}

// inspectImage inspects ref; an absent image is ErrNotFound.
func (r *Runtime) inspectImage(ctx context.Context, ref string) (image.InspectResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	img, err := r.cli.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return img, fmt.Errorf("image %s: %w", ref, ErrNotFound)
		}
		return img, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return img, nil
}

// DanglingImages returns the IDs of the untagged images carrying the
// labels (a label with an empty value matches any value).
func (r *Runtime) DanglingImages(ctx context.Context, labelFilter map[string]string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	args := labelArgs(labelFilter)
	args.Add("dangling", "true")
	imgs, err := r.cli.ImageList(ctx, image.ListOptions{Filters: args})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	var ids []string
	for _, img := range imgs {
		ids = append(ids, img.ID)
	}
	return ids, nil
}

// PullImage pulls ref, draining the progress stream.
func (r *Runtime) PullImage(ctx context.Context, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rc, err := r.cli.ImagePull(ctx, ref, image.PullOptions{})
	return drainStream("pull "+ref, rc, err)
}

// PushImage gives the image ref (an ID or a reference) the name dst and
// pushes dst to its registry (one the engine reaches without
// credentials: a registry on the loopback is reached over plain HTTP).
func (r *Runtime) PushImage(ctx context.Context, ref, dst string) error {
	ctx, cancel := context.WithTimeout(ctx, longCall)
	defer cancel()
	if err := r.cli.ImageTag(ctx, ref, dst); err != nil {
		return fmt.Errorf("tag %s as %s: %w", ref, dst, err)
	}
	// No credentials: the API still wants the header, as base64 of {}.
	rc, err := r.cli.ImagePush(ctx, dst, image.PushOptions{RegistryAuth: "e30="})
	return drainStream("push "+dst, rc, err)
}

// ImportImage imports a root filesystem tarball as ref.
func (r *Runtime) ImportImage(ctx context.Context, tarball io.Reader, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, longCall)
	defer cancel()
	rc, err := r.cli.ImageImport(ctx, image.ImportSource{Source: tarball, SourceName: "-"}, ref, image.ImportOptions{
		Message: "rttlab images base: debootstrap --variant=minbase trixie",
		Changes: []string{`CMD ["bash"]`},
	})
	return drainStream("import "+ref, rc, err)
}

// drainStream drains the progress stream rc of the call what (pull,
// push or import, with its subject) that returned err, and closes it;
// either error is wrapped with what.
func drainStream(what string, rc io.ReadCloser, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer rc.Close()
	if _, err := readJSONStream(rc, nil); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// RemoveImage removes one image (by id or reference) and its untagged
// parents; a missing image is not an error.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	if _, err := r.cli.ImageRemove(ctx, ref, imageRemoveForce); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w", ShortID(ref), err)
	}
	return nil
}

// RemoveReplaced removes an image a build replaced and its untagged
// parents that nothing else uses; an image a container still uses, or
// that is gone already, stays without error.
func (r *Runtime) RemoveReplaced(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	_, err := r.cli.ImageRemove(ctx, id, image.RemoveOptions{PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("remove image %s: %w", ShortID(id), err)
	}
	return nil
}

// RemoveImages removes every image carrying the labels.
func (r *Runtime) RemoveImages(ctx context.Context, labelFilter map[string]string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	imgs, err := r.cli.ImageList(ctx, image.ListOptions{Filters: labelArgs(labelFilter)})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	var removed []string
	for _, img := range imgs {
		// A user's image built FROM one of rttlab's inherits its labels:
		// it is never removed.
		if !BuiltByRttlab(img.RepoTags, img.Labels) {
			continue
		}
		if _, err := r.cli.ImageRemove(ctx, img.ID, imageRemoveForce); err != nil && !cerrdefs.IsNotFound(err) {
			return removed, fmt.Errorf("remove image %s: %w", img.ID, err)
		}
		removed = append(removed, img.ID)
	}
	return removed, nil
}

// ContainerSpec is what CreateContainer needs.
type ContainerSpec struct {
	Name       string
	Image      string
	Cmd        []string
	Entrypoint []string
	Env        []string
	Labels     map[string]string
	User       string
	// Network to join with aliases; empty when NetworkMode is container:<id>.
	Network     string
	Aliases     []string
	NetworkMode string // e.g. "container:<id>"
	CapAdd      []string
	CapDrop     []string
	// Ports to publish on 127.0.0.1 with an ephemeral host port
	// ("8080/tcp").
	PublishLocal []string
	ExposedPorts []string
	Init         bool
	WorkingDir   string
	// Binds are host:container[:ro] bind mounts; Volumes are container
	// paths given fresh anonymous volumes (removed with the container);
	// Tmpfs are container paths mounted as tmpfs.
	Binds   []string
	Volumes []string
	Tmpfs   []string
	// Healthcheck, when set, is the container's health check.
	Healthcheck *container.HealthConfig
	// NanoCPUs is the container's CPU quota in billionths of a CPU
	// (docker run --cpus × 1e9); 0 leaves it unlimited.
	NanoCPUs int64
	// Platform the container runs: the engine refuses an image of another
	// one. Zero: whatever the image is.
	Platform Platform
}

// CreateContainer creates (does not start) a container.
func (r *Runtime) CreateContainer(ctx context.Context, s ContainerSpec) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	cfg, hc, nc := s.configs()
	resp, err := r.cli.ContainerCreate(ctx, cfg, hc, nc, s.Platform.oci(), s.Name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("create %s: %w: %s", s.Name, ErrImageMissing, s.Image)
		}
		return "", fmt.Errorf("create %s: %w", s.Name, err)
	}
	return resp.ID, nil
}

// configs returns the engine's container, host and networking
// configurations of s; the last is nil without a network to join.
func (s ContainerSpec) configs() (*container.Config, *container.HostConfig, *network.NetworkingConfig) {
	cfg := &container.Config{
		Image:       s.Image,
		Cmd:         s.Cmd,
		Entrypoint:  s.Entrypoint,
		Env:         s.Env,
		Labels:      s.Labels,
		User:        s.User,
		WorkingDir:  s.WorkingDir,
		Healthcheck: s.Healthcheck,
	}
	hc := &container.HostConfig{
		CapAdd:      s.CapAdd,
		CapDrop:     s.CapDrop,
		NetworkMode: container.NetworkMode(s.NetworkMode),
		Binds:       s.Binds,
		Resources:   container.Resources{NanoCPUs: s.NanoCPUs},
	}
	if len(s.Volumes) > 0 {
		cfg.Volumes = map[string]struct{}{}
		for _, v := range s.Volumes {
			cfg.Volumes[v] = struct{}{}
		}
	}
	if len(s.Tmpfs) > 0 {
		hc.Tmpfs = map[string]string{}
		for _, t := range s.Tmpfs {
			path, opts, _ := strings.Cut(t, ":")
			hc.Tmpfs[path] = opts
		}
	}
	if s.Init {
		t := true
		hc.Init = &t
	}
	cfg.ExposedPorts, hc.PortBindings = s.ports()
	var nc *network.NetworkingConfig
	if s.Network != "" {
		hc.NetworkMode = container.NetworkMode(s.Network)
		nc = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			s.Network: {Aliases: s.Aliases},
		}}
	}
	return cfg, hc, nc
}

// ports returns the exposed ports of s (the published ones included) and
// the bindings of the published ones to ephemeral ports on 127.0.0.1; each
// is nil when empty.
func (s ContainerSpec) ports() (map[natPort]struct{}, map[natPort][]natBinding) {
	exposed := map[string]struct{}{}
	for _, p := range s.ExposedPorts {
		exposed[p] = struct{}{}
	}
	var bindings map[natPort][]natBinding
	if len(s.PublishLocal) > 0 {
		bindings = map[natPort][]natBinding{}
		for _, p := range s.PublishLocal {
			exposed[p] = struct{}{}
			bindings[natPort(p)] = []natBinding{{HostIP: "127.0.0.1", HostPort: ""}}
		}
	}
	var ports map[natPort]struct{}
	if len(exposed) > 0 {
		ports = map[natPort]struct{}{}
		for p := range exposed {
			ports[natPort(p)] = struct{}{}
		}
	}
	return ports, bindings
}

// StartContainer starts a created container.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	if err := r.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start %s: %w", ShortID(id), err)
	}
	return nil
}

// InspectContainer returns the engine's view of a container.
func (r *Runtime) InspectContainer(ctx context.Context, id string) (container.InspectResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	c, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return c, fmt.Errorf("container %s: %w", id, ErrNotFound)
		}
		return c, fmt.Errorf("inspect %s: %w", ShortID(id), err)
	}
	return c, nil
}

// StopContainer stops a container with a grace period.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, shortCall+grace)
	defer cancel()
	secs := int(grace / time.Second)
	if err := r.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("stop %s: %w", ShortID(id), err)
	}
	return nil
}

// KillContainer sends a signal to a container's main process.
func (r *Runtime) KillContainer(ctx context.Context, id, signal string) error {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	if err := r.cli.ContainerKill(ctx, id, signal); err != nil {
		return fmt.Errorf("kill %s: %w", ShortID(id), err)
	}
	return nil
}

// RemoveContainer force-removes a container and its anonymous volumes.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	err := r.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", ShortID(id), err)
	}
	return nil
}

// ListContainers lists containers (running or not) carrying the labels.
func (r *Runtime) ListContainers(ctx context.Context, labelFilter map[string]string) ([]container.Summary, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	cs, err := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: labelArgs(labelFilter)})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return cs, nil
}

// ExecSpec describes a command run inside a container: the runtime's,
// which every runtime takes.
type ExecSpec = runtime.ExecSpec

// Exec runs a command in a running container, streaming its demultiplexed
// output, and returns its exit code.
func (r *Runtime) Exec(ctx context.Context, id string, s ExecSpec) (int, error) {
	to := s.Timeout
	if to == 0 {
		to = shortCall
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	created, err := r.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		Cmd:          s.Cmd,
		User:         s.User,
		Env:          s.Env,
		AttachStdin:  s.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return -1, fmt.Errorf("exec %s in %s: %w", s.Cmd[0], ShortID(id), err)
	}
	att, err := r.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return -1, fmt.Errorf("attach exec %s in %s: %w", s.Cmd[0], ShortID(id), err)
	}
	defer att.Close()
	if s.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, s.Stdin)
			_ = att.CloseWrite()
		}()
	}
	stdout, stderr := s.Stdout, s.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		att.Close()
		<-done
		return -1, fmt.Errorf("exec %s in %s: %w", s.Cmd[0], ShortID(id), ctx.Err())
	}
	if err != nil {
		return -1, fmt.Errorf("exec %s in %s: read output: %w", s.Cmd[0], ShortID(id), err)
	}
	ins, err := r.cli.ContainerExecInspect(ctx, created.ID)
	if err != nil {
		return -1, fmt.Errorf("exec %s in %s: inspect: %w", s.Cmd[0], ShortID(id), err)
	}
	return ins.ExitCode, nil
}

// CopyToContainer extracts a tar archive into dir inside the container.
func (r *Runtime) CopyToContainer(ctx context.Context, id, dir string, tarball io.Reader) error {
	ctx, cancel := context.WithTimeout(ctx, longCall)
	defer cancel()
	if err := r.cli.CopyToContainer(ctx, id, dir, tarball, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copy into %s:%s: %w", ShortID(id), dir, err)
	}
	return nil
}

// CreateNetwork creates a labelled bridge network.
func (r *Runtime) CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	resp, err := r.cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Labels: labels})
	if err != nil {
		return "", fmt.Errorf("create network %s: %w", name, err)
	}
	return resp.ID, nil
}

// RemoveNetwork removes a network.
func (r *Runtime) RemoveNetwork(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	if err := r.cli.NetworkRemove(ctx, id); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove network %s: %w", ShortID(id), err)
	}
	return nil
}

// ListNetworks lists networks carrying the labels.
func (r *Runtime) ListNetworks(ctx context.Context, labelFilter map[string]string) ([]network.Summary, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	ns, err := r.cli.NetworkList(ctx, network.ListOptions{Filters: labelArgs(labelFilter)})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	return ns, nil
}

// ListVolumes lists volume names carrying the labels.
func (r *Runtime) ListVolumes(ctx context.Context, labelFilter map[string]string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	resp, err := r.cli.VolumeList(ctx, volume.ListOptions{Filters: labelArgs(labelFilter)})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	var out []string
	for _, v := range resp.Volumes {
		out = append(out, v.Name)
	}
	return out, nil
}

// RemoveVolume removes a volume.
func (r *Runtime) RemoveVolume(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	if err := r.cli.VolumeRemove(ctx, name, true); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove volume %s: %w", name, err)
	}
	return nil
}

// jsonMessage is one line of the engine's build/pull/import stream.
type jsonMessage struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	Aux json.RawMessage `json:"aux"`
}

// readJSONStream drains an engine JSON message stream. Stream text goes
// to out (if not nil); the last lines are kept to explain a failure.
func readJSONStream(r io.Reader, out io.Writer) ([]string, error) {
	dec := json.NewDecoder(r)
	var tail []string
	keep := func(s string) {
		s = ansiRE.ReplaceAllString(s, "")
		for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			tail = append(tail, l)
			if len(tail) > 15 {
				tail = tail[1:]
			}
		}
	}
	for {
		var m jsonMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return tail, nil
			}
			return tail, fmt.Errorf("read engine stream: %w", err)
		}
		if m.Stream != "" {
			keep(m.Stream)
			if out != nil {
				io.WriteString(out, m.Stream)
			}
		}
		if m.Error != "" || m.ErrorDetail != nil {
			msg := m.Error
			if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
				msg = m.ErrorDetail.Message
			}
			return tail, &StreamError{Msg: msg, Tail: tail}
		}
	}
}

// ansiRE matches terminal colour codes (the classic builder colours a
// step's stderr).
var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

// StreamError is a failure reported inside an engine stream (build, pull,
// import), with the last lines of output that led to it.
type StreamError struct {
	Msg  string
	Tail []string
}

func (e *StreamError) Error() string {
	if len(e.Tail) == 0 {
		return e.Msg
	}
	return e.Msg + "\n  last output:\n    " + strings.Join(e.Tail, "\n    ")
}

// ShortID is the form of a container or image id people read: its first 12
// hex digits (a name is kept whole).
func ShortID(id string) string {
	if len(id) > 12 && !strings.ContainsAny(id, "-_") {
		return id[:12]
	}
	return id
}

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

type (
	natPort    = nat.Port
	natBinding = nat.PortBinding
)

// Logs returns the last tail lines of a container's output.
func (r *Runtime) Logs(ctx context.Context, id string, tail int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	rc, err := r.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(tail)})
	if err != nil {
		return "", fmt.Errorf("logs %s: %w", ShortID(id), err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return buf.String(), fmt.Errorf("logs %s: %w", ShortID(id), err)
	}
	return buf.String(), nil
}

var imageRemoveForce = image.RemoveOptions{Force: true, PruneChildren: true}

// Truncate cuts s to at most n runes, marking the cut with "...".
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "..."
}
