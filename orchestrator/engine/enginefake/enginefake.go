// Package enginefake is an in-memory Docker engine (engine.Docker) for the
// unit tests of the packages that start containers: the engine's own, the
// stack and shaping packages, the RTT study, the placement study and the
// worker study's runner (the last through fakelab). Tests script what the
// programs inside the containers print (see Engine.Handle).
package enginefake

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/internal/fakes"
	labrt "github.com/rttlab/rttlab/orchestrator/runtime"
)

// Engine is an in-memory Docker engine for unit tests. It keeps
// containers (labels, state, IPs, logs), networks, volumes and images the
// way the engine does where rttlab relies on it:
//
//   - container names are unique, so a stack started again before the old
//     one is removed fails as it would on an engine;
//   - a network with containers attached cannot be removed;
//   - a container needs an existing image and, when it joins one, network;
//   - Exec needs a running container and honours a cancelled context.
//
// Exec is answered by handlers registered per command prefix (see Handle),
// so a test scripts what `rttlab agent ctl`, `agent ping`, `agent load`,
// psql and the rest print and return. Faults: FailOn makes calls fail,
// Exit and CrashOnStart make containers stop.
type Engine struct {
	mu sync.Mutex

	Info       engine.EngineInfo
	seq        int
	containers map[string]*Container // by ID
	networks   map[string]*Network   // by ID
	volumes    map[string]map[string]string
	images     map[string]*Image // by reference
	Pullable   map[string]bool
	handlers   map[string]Handler
	// streams: command prefixes whose handlers read stdin as it comes
	// (Call.StdinR) instead of after it closed (Call.Stdin).
	streams map[string]bool
	faults  []*Fault
	crashes []*Fault
	// hostPort answers every published port (PublishLocal) with this host
	// port on 127.0.0.1.
	HostPort string
	// ipByService fixes the IP of containers by compose service name; the
	// others get 10.89.0.N in creation order.
	IPByService map[string]string

	created   []engine.ContainerSpec // every CreateContainer that succeeded
	calls     []string               // "Op subject" of every call, in order
	execs     []ExecRecord
	Unhandled []string
	Builds    []Build
	// copied holds, per container name, the files CopyToContainer
	// extracted (path inside the container -> content).
	Copied map[string]map[string][]byte
}

type Container struct {
	ID       string
	Spec     engine.ContainerSpec
	seq      int
	State    string // created, running, exited
	ExitCode int
	Logs     string
	IP       string
}

type Network struct {
	ID     string
	Name   string
	Labels map[string]string
}

type Image struct {
	ID     string
	Labels map[string]string
	// Platform the image was built for (engine.Platform.String()); empty: the
	// engine's own.
	Platform string
}

// ExecRecord is one Exec the fake answered.
type ExecRecord struct {
	Container string // name
	Cmd       []string
}

// Build is one BuildImage: its options and the context's file names.
type Build struct {
	Opts  engine.BuildOptions
	Files []string
}

// Fault makes matching calls fail (or, as a crash, makes matching
// containers exit when started).
type Fault struct {
	armed fakes.Armed // the op, the end of a subject (see FailOn), the times left
	err   error
	code  int    // crashes: exit code
	logs  string // crashes: what the container printed
	Hits  int
}

// Call is what an exec handler sees.
type Call struct {
	Container Container // a copy, as it was when the exec started
	Cmd       []string
	Env       []string
	User      string
	Stdin     []byte
	// StdinR is stdin unread, for handlers registered with HandleStream.
	StdinR io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Flag returns the value following name in the command line, or "".
func (x *Call) Flag(name string) string {
	for i := 0; i+1 < len(x.Cmd); i++ {
		if x.Cmd[i] == name {
			return x.Cmd[i+1]
		}
	}
	return ""
}

// Flags returns every value following name in the command line.
func (x *Call) Flags(name string) []string {
	var out []string
	for i := 0; i+1 < len(x.Cmd); i++ {
		if x.Cmd[i] == name {
			out = append(out, x.Cmd[i+1])
		}
	}
	return out
}

// Service is the compose service the container belongs to (an agent
// carries its target's).
func (x *Call) Service() string { return x.Container.Spec.Labels[engine.LabelService] }

// Handler answers an Exec: what it writes to Stdout and Stderr, its
// exit code, and an error for a failure of the exec itself.
type Handler func(ctx context.Context, x *Call) (int, error)

var _ engine.Docker = (*Engine)(nil)

func New() *Engine {
	return &Engine{
		Info: engine.EngineInfo{Version: "20.10.24+fake", APIVersion: "1.41", OS: "linux", Arch: runtime.GOARCH,
			Kernel: "6.1.0-fake", CPUs: 2, MemBytes: 4 << 30, Root: "/var/lib/docker"},
		containers:  map[string]*Container{},
		networks:    map[string]*Network{},
		volumes:     map[string]map[string]string{},
		images:      map[string]*Image{},
		Pullable:    map[string]bool{},
		handlers:    map[string]Handler{},
		streams:     map[string]bool{},
		IPByService: map[string]string{},
	}
}

func (f *Engine) newID(kind, name string) string {
	f.seq++
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", kind, name, f.seq)))
	return hex.EncodeToString(h[:])
}

// Handle registers h for commands starting with prefix (words separated
// by spaces; /usr/local/bin/rttlab is written rttlab). The longest
// matching prefix answers; a later registration replaces an earlier one.
func (f *Engine) Handle(prefix string, h Handler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[prefix] = h
	delete(f.streams, prefix)
}

// HandleStream is Handle for a command that reads stdin while it runs
// (x.StdinR), such as a capture stopped by closing its stdin.
func (f *Engine) HandleStream(prefix string, h Handler) {
	f.Handle(prefix, h)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streams[prefix] = true
}

// FailOn makes the next times calls of op whose subject ends with match
// fail with err (times < 0: every call; match "" any call). Subjects: the
// container's name and ID, the network's name and ID, the image
// reference, the volume name; Exec also matches when its command line
// contains match.
func (f *Engine) FailOn(op, match string, times int, err error) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := &Fault{armed: fakes.Armed{Op: op, Match: match, Times: times}, err: err}
	f.faults = append(f.faults, ft)
	return ft
}

// CrashOnStart makes the next times containers whose name ends with match
// exit with code right after they start, having printed logs.
func (f *Engine) CrashOnStart(match string, times, code int, logs string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashes = append(f.crashes, &Fault{armed: fakes.Armed{Match: match, Times: times}, code: code, logs: logs})
}

// Exit makes every running container whose name ends with match exit.
func (f *Engine) Exit(match string, code int, logs string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.containers {
		if c.State == container.StateRunning && strings.HasSuffix(c.Spec.Name, match) {
			c.State, c.ExitCode, c.Logs = container.StateExited, code, c.Logs+logs
			n++
		}
	}
	return n
}

// DropImage removes the image ref, as if it was never built.
func (f *Engine) DropImage(ref string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.images, ref)
}

// Images returns a copy of every image the fake holds.
func (f *Engine) Images() []Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Image, 0, len(f.images))
	for _, img := range f.images {
		out = append(out, Image{ID: img.ID, Labels: copyLabels(img.Labels)})
	}
	return out
}

// AddImage adds the image ref with labels and returns its ID.
func (f *Engine) AddImage(ref string, labels map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addImageLocked(ref, labels)
}

// AddPlatformImage adds an image built for platform (its String()):
// a container created with another platform is refused, as the engine
// does.
func (f *Engine) AddPlatformImage(ref string, labels map[string]string, platform string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.addImageLocked(ref, labels)
	f.images[ref].Platform = platform
	return id
}

// Image returns a copy of the image ref, or nil when absent.
func (f *Engine) Image(ref string) *Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	img, ok := f.images[ref]
	if !ok {
		return nil
	}
	c := *img
	return &c
}

func (f *Engine) addImageLocked(ref string, labels map[string]string) string {
	id := "sha256:" + f.newID("image", ref)
	f.images[ref] = &Image{ID: id, Labels: labels}
	return id
}

func (f *Engine) AddVolume(name string, labels map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.volumes[name] = labels
}

// faultLocked returns the error of the first armed fault of op matching a
// subject, and uses it up.
func (f *Engine) faultLocked(op string, subjects ...string) error {
	return f.faultMatchLocked(op, func(match string) bool { return matchAny(match, subjects) })
}

func (f *Engine) faultMatchLocked(op string, matches func(match string) bool) error {
	for _, ft := range f.faults {
		if !ft.armed.Fire(op, matches) {
			continue
		}
		ft.Hits++
		return ft.err
	}
	return nil
}

func matchAny(match string, subjects []string) bool {
	if match == "" {
		return true
	}
	for _, s := range subjects {
		if strings.HasSuffix(s, match) {
			return true
		}
	}
	return false
}

func (f *Engine) record(op, subject string) {
	f.calls = append(f.calls, op+" "+subject)
}

// Calls returns "Op subject" for every call so far.
func (f *Engine) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// CountCalls counts the calls of op.
func (f *Engine) CountCalls(op string) int {
	n := 0
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, op+" ") {
			n++
		}
	}
	return n
}

// Created returns the specs of the containers created so far, without
// the short-lived ones that only answer one question (the kernel netem
// probe, a rule sweep).
func (f *Engine) Created() []engine.ContainerSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.ContainerSpec
	for _, c := range f.created {
		if c.Labels[engine.LabelRole] != engine.RoleOnce {
			out = append(out, c)
		}
	}
	return out
}

// Execs returns every exec answered so far.
func (f *Engine) Execs() []ExecRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ExecRecord(nil), f.execs...)
}

// Live returns the names of the containers and networks that exist.
func (f *Engine) Live() (containers, networks []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.sortedContainersLocked() {
		containers = append(containers, c.Spec.Name)
	}
	for _, n := range f.networks {
		networks = append(networks, n.Name)
	}
	sort.Strings(networks)
	return containers, networks
}

// RequireEmpty fails the test when any container or network is left.
func (f *Engine) RequireEmpty(t testing.TB) {
	t.Helper()
	cs, ns := f.Live()
	if len(cs) > 0 || len(ns) > 0 {
		t.Fatalf("left behind: containers %v, networks %v", cs, ns)
	}
}

func (f *Engine) sortedContainersLocked() []*Container {
	out := make([]*Container, 0, len(f.containers))
	for _, c := range f.containers {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// lookupLocked finds a container by ID or name.
func (f *Engine) lookupLocked(idOrName string) *Container {
	if c, ok := f.containers[idOrName]; ok {
		return c
	}
	for _, c := range f.containers {
		if c.Spec.Name == strings.TrimPrefix(idOrName, "/") {
			return c
		}
	}
	return nil
}

func (f *Engine) networkLocked(idOrName string) *Network {
	if n, ok := f.networks[idOrName]; ok {
		return n
	}
	for _, n := range f.networks {
		if n.Name == idOrName {
			return n
		}
	}
	return nil
}

func copyLabels(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Engine

func (f *Engine) EngineInfo(ctx context.Context) (engine.EngineInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("EngineInfo", "")
	if err := f.faultLocked("EngineInfo"); err != nil {
		return engine.EngineInfo{}, err
	}
	return f.Info, nil
}

// ImageStore

func (f *Engine) ImageID(ctx context.Context, ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ImageID", ref)
	if err := f.faultLocked("ImageID", ref); err != nil {
		return "", err
	}
	img, ok := f.images[ref]
	if !ok {
		return "", fmt.Errorf("image %s: %w", ref, engine.ErrNotFound)
	}
	return img.ID, nil
}

func (f *Engine) PullImage(ctx context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("PullImage", ref)
	if err := f.faultLocked("PullImage", ref); err != nil {
		return err
	}
	if !f.Pullable[ref] {
		return fmt.Errorf("pull %s: Error response from daemon: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io: no such host", ref)
	}
	f.addImageLocked(ref, nil)
	return nil
}

func (f *Engine) ImportImage(ctx context.Context, tarball io.Reader, ref string) error {
	if _, err := io.Copy(io.Discard, tarball); err != nil {
		return fmt.Errorf("import %s: %w", ref, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ImportImage", ref)
	if err := f.faultLocked("ImportImage", ref); err != nil {
		return err
	}
	f.addImageLocked(ref, nil)
	return nil
}

func (f *Engine) BuildImage(ctx context.Context, tarCtx io.Reader, o engine.BuildOptions) (engine.BuildResult, error) {
	var files []string
	tr := tar.NewReader(tarCtx)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return engine.BuildResult{}, fmt.Errorf("build %s: context is not a tar stream: %w", o.Tag, err)
		}
		files = append(files, h.Name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("BuildImage", o.Tag)
	f.Builds = append(f.Builds, Build{Opts: o, Files: files})
	if err := f.faultLocked("BuildImage", o.Tag); err != nil {
		return engine.BuildResult{}, fmt.Errorf("build %s: %w", o.Tag, err)
	}
	if o.Log != nil {
		fmt.Fprintf(o.Log, "Step 1/1 : FROM %s\nSuccessfully tagged %s\n", engine.BaseImage, o.Tag)
	}
	id := f.addImageLocked(o.Tag, copyLabels(o.Labels))
	f.images[o.Tag].Platform = o.Platform.String()
	return engine.BuildResult{ID: id, Duration: time.Millisecond}, nil
}

// RemoveReplaced removes the image id unless a container uses it, as the
// engine does for a build's replaced image.
func (f *Engine) RemoveReplaced(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveReplaced", id)
	for ref, img := range f.images {
		if img.ID != id {
			continue
		}
		for _, c := range f.containers {
			if c.Spec.Image == ref {
				return nil
			}
		}
		delete(f.images, ref)
	}
	return nil
}

func (f *Engine) RemoveImages(ctx context.Context, labelFilter map[string]string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveImages", "")
	var refs []string
	for ref, img := range f.images {
		if fakes.LabelsMatch(img.Labels, labelFilter) && engine.BuiltByRttlab([]string{ref}, img.Labels) {
			refs = append(refs, ref)
		}
	}
	sort.Strings(refs)
	var removed []string
	for _, ref := range refs {
		if err := f.faultLocked("RemoveImages", ref); err != nil {
			return removed, err
		}
		removed = append(removed, f.images[ref].ID)
		delete(f.images, ref)
	}
	return removed, nil
}

// Containers

func (f *Engine) CreateContainer(ctx context.Context, s engine.ContainerSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("CreateContainer", s.Name)
	if err := f.faultLocked("CreateContainer", s.Name); err != nil {
		return "", err
	}
	if s.Name != "" && f.lookupLocked(s.Name) != nil {
		return "", fmt.Errorf("create %s: Conflict. The container name \"/%s\" is already in use", s.Name, s.Name)
	}
	img, ok := f.images[s.Image]
	if !ok {
		return "", fmt.Errorf("create %s: image %s is missing: run `rttlab images build`: No such image: %s", s.Name, s.Image, s.Image)
	}
	if img.Platform != "" && s.Platform.String() != "" && img.Platform != s.Platform.String() {
		return "", fmt.Errorf("create %s: image with reference %s was found but does not match the specified platform: wanted %s, actual: %s", s.Name, s.Image, s.Platform, img.Platform)
	}
	if s.Network != "" && f.networkLocked(s.Network) == nil {
		return "", fmt.Errorf("create %s: network %s not found", s.Name, s.Network)
	}
	if target, ok := strings.CutPrefix(s.NetworkMode, "container:"); ok && f.lookupLocked(target) == nil {
		return "", fmt.Errorf("create %s: joining network namespace of container: No such container: %s", s.Name, target)
	}
	id := f.newID("container", s.Name)
	s.Labels = copyLabels(s.Labels)
	f.containers[id] = &Container{ID: id, Spec: s, seq: f.seq, State: container.StateCreated}
	f.created = append(f.created, s)
	return id, nil
}

func (f *Engine) StartContainer(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("StartContainer", id)
	c := f.lookupLocked(id)
	if c == nil {
		return fmt.Errorf("start %s: No such container", engine.ShortID(id))
	}
	if err := f.faultLocked("StartContainer", c.Spec.Name, id); err != nil {
		return err
	}
	if target, ok := strings.CutPrefix(c.Spec.NetworkMode, "container:"); ok {
		t := f.lookupLocked(target)
		if t == nil || t.State != container.StateRunning {
			return fmt.Errorf("start %s: cannot join network namespace of a non running container", engine.ShortID(id))
		}
	}
	c.State = container.StateRunning
	if c.Spec.Network != "" && c.IP == "" {
		c.IP = f.IPByService[c.Spec.Labels[engine.LabelService]]
		if c.IP == "" {
			c.IP = netip.AddrFrom4([4]byte{10, 89, 0, byte(1 + c.seq%250)}).String()
		}
	}
	for _, cr := range f.crashes {
		if cr.armed.Fire("", func(match string) bool { return matchAny(match, []string{c.Spec.Name}) }) {
			cr.Hits++
			c.State, c.ExitCode, c.Logs = container.StateExited, cr.code, c.Logs+cr.logs
			break
		}
	}
	return nil
}

func (f *Engine) InspectContainer(ctx context.Context, id string) (container.InspectResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("InspectContainer", id)
	c := f.lookupLocked(id)
	if c == nil {
		return container.InspectResponse{}, fmt.Errorf("container %s: %w", id, engine.ErrNotFound)
	}
	if err := f.faultLocked("InspectContainer", c.Spec.Name, id); err != nil {
		return container.InspectResponse{}, err
	}
	ns := &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{}}
	if c.Spec.Network != "" {
		// A stopped container keeps its endpoint but not its address.
		ep := &network.EndpointSettings{Aliases: c.Spec.Aliases}
		ns.Networks[c.Spec.Network] = ep
		if c.State == container.StateRunning {
			ep.IPAddress = c.IP
		}
		if len(c.Spec.PublishLocal) > 0 && c.State == container.StateRunning {
			ns.Ports = nat.PortMap{}
			for _, p := range c.Spec.PublishLocal {
				ns.Ports[nat.Port(p)] = []nat.PortBinding{{HostIP: "127.0.0.1", HostPort: f.HostPort}}
			}
		}
	}
	return container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{
			ID:    c.ID,
			Name:  "/" + c.Spec.Name,
			Image: c.Spec.Image,
			State: &container.State{Status: c.State, Running: c.State == container.StateRunning, ExitCode: c.ExitCode},
		},
		Config:          &container.Config{Image: c.Spec.Image, Env: append([]string(nil), c.Spec.Env...), Labels: copyLabels(c.Spec.Labels), Cmd: c.Spec.Cmd},
		NetworkSettings: ns,
	}, nil
}

func (f *Engine) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("StopContainer", id)
	c := f.lookupLocked(id)
	if c == nil {
		return nil // the engine's "not found" is not an error here
	}
	if err := f.faultLocked("StopContainer", c.Spec.Name, id); err != nil {
		return err
	}
	if c.State == container.StateRunning {
		c.State, c.ExitCode = container.StateExited, 143
	}
	return nil
}

func (f *Engine) KillContainer(ctx context.Context, id, signal string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("KillContainer", id+" "+signal)
	c := f.lookupLocked(id)
	if c == nil {
		return fmt.Errorf("kill %s: No such container", engine.ShortID(id))
	}
	if err := f.faultLocked("KillContainer", c.Spec.Name, id); err != nil {
		return err
	}
	if c.State != container.StateRunning {
		return fmt.Errorf("kill %s: container is not running", engine.ShortID(id))
	}
	c.State, c.ExitCode = container.StateExited, 137
	return nil
}

func (f *Engine) RemoveContainer(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveContainer", id)
	c := f.lookupLocked(id)
	if c == nil {
		return nil // already gone: the engine's "not found" is ignored
	}
	if err := f.faultLocked("RemoveContainer", c.Spec.Name, id); err != nil {
		return err
	}
	delete(f.containers, c.ID)
	return nil
}

func (f *Engine) ListContainers(ctx context.Context, labelFilter map[string]string) ([]container.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListContainers", "")
	if err := f.faultLocked("ListContainers"); err != nil {
		return nil, err
	}
	var out []container.Summary
	for _, c := range f.sortedContainersLocked() {
		if !fakes.LabelsMatch(c.Spec.Labels, labelFilter) {
			continue
		}
		out = append(out, container.Summary{ID: c.ID, Names: []string{"/" + c.Spec.Name}, Image: c.Spec.Image,
			Labels: copyLabels(c.Spec.Labels), State: c.State})
	}
	return out, nil
}

func (f *Engine) Exec(ctx context.Context, id string, s engine.ExecSpec) (int, error) {
	key := CommandKey(s.Cmd)
	f.mu.Lock()
	f.record("Exec", key)
	c := f.lookupLocked(id)
	if c == nil {
		f.mu.Unlock()
		return -1, fmt.Errorf("exec %s in %s: No such container: %s", s.Cmd[0], engine.ShortID(id), id)
	}
	if err := ctx.Err(); err != nil {
		f.mu.Unlock()
		return -1, fmt.Errorf("exec %s in %s: %w", s.Cmd[0], engine.ShortID(id), err)
	}
	if err := f.faultMatchLocked("Exec", func(match string) bool {
		return matchAny(match, []string{c.Spec.Name, c.ID}) || strings.Contains(key, match)
	}); err != nil {
		f.mu.Unlock()
		return -1, err
	}
	if c.State != container.StateRunning {
		f.mu.Unlock()
		return -1, fmt.Errorf("exec %s in %s: container %s is not running", s.Cmd[0], engine.ShortID(id), id)
	}
	f.execs = append(f.execs, ExecRecord{Container: c.Spec.Name, Cmd: append([]string(nil), s.Cmd...)})
	_, h, _ := fakes.Handler(f.handlers, key)
	stream := false
	for p := range f.streams {
		stream = stream || key == p || strings.HasPrefix(key, p+" ")
	}
	if h == nil && key != "rttlab agent session" {
		f.Unhandled = append(f.Unhandled, key)
	}
	x := &Call{Container: *c, Cmd: s.Cmd, Env: s.Env, User: s.User, Stdout: s.Stdout, Stderr: s.Stderr}
	x.Container.Spec.Labels = copyLabels(c.Spec.Labels)
	f.mu.Unlock()

	if h == nil && key == "rttlab agent session" {
		// A session runs each call it is sent as an exec of its own here,
		// with the handlers of the verbs.
		return 0, fakes.ServeSession(ctx, s.Stdin, x.Stdout, "/usr/local/bin/rttlab", func(ctx context.Context, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
			return f.Exec(ctx, id, engine.ExecSpec{Cmd: cmd, Stdin: stdin, Stdout: stdout, Stderr: stderr})
		})
	}
	if err := x.fillIO(s.Stdin, stream); err != nil {
		return -1, err
	}
	if h == nil {
		fmt.Fprintf(x.Stderr, "OCI runtime exec failed: exec: %q: executable file not found in $PATH\n", s.Cmd[0])
		return 127, nil
	}
	code, err := h(ctx, x)
	if err == nil && ctx.Err() != nil {
		return -1, fmt.Errorf("exec %s in %s: %w", s.Cmd[0], engine.ShortID(id), ctx.Err())
	}
	return code, err
}

// fillIO sends output without a writer to io.Discard and hands over
// stdin, if any: unread for a streaming command, else read in full.
func (x *Call) fillIO(stdin io.Reader, stream bool) error {
	if x.Stdout == nil {
		x.Stdout = io.Discard
	}
	if x.Stderr == nil {
		x.Stderr = io.Discard
	}
	if stdin != nil && stream {
		x.StdinR = stdin
	} else if stdin != nil {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		x.Stdin = b
	}
	return nil
}

func (f *Engine) CopyToContainer(ctx context.Context, id, dir string, tarball io.Reader) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("CopyToContainer", dir)
	c := f.lookupLocked(id)
	if c == nil {
		return fmt.Errorf("copy into %s: No such container: %s", engine.ShortID(id), id)
	}
	if err := f.faultLocked("CopyToContainer", c.Spec.Name, c.ID); err != nil {
		return err
	}
	return f.extractLocked(c.Spec.Name, dir, tarball, func(err error) error {
		return fmt.Errorf("copy into %s: %w", engine.ShortID(id), err)
	})
}

// Extract extracts the tar archive tarball into dir of the container
// named name, into Copied, as CopyToContainer does: for a double beside
// the engine that copies into its members by other means.
func (f *Engine) Extract(name, dir string, tarball io.Reader) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.extractLocked(name, dir, tarball, func(err error) error { return err })
}

// extractLocked extracts tarball into dir of the container named name,
// into Copied; badHeader gives the error of a header it cannot read.
func (f *Engine) extractLocked(name, dir string, tarball io.Reader, badHeader func(error) error) error {
	tr := tar.NewReader(tarball)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return badHeader(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if f.Copied == nil {
			f.Copied = map[string]map[string][]byte{}
		}
		if f.Copied[name] == nil {
			f.Copied[name] = map[string][]byte{}
		}
		f.Copied[name][path.Join(dir, h.Name)] = b
	}
}

// CommandKey is how handlers see a command line: its words joined by
// spaces, /usr/local/bin/rttlab written rttlab.
func CommandKey(cmd []string) string { return fakes.CommandKey(cmd) }

func (f *Engine) Logs(ctx context.Context, id string, tail int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Logs", id)
	c := f.lookupLocked(id)
	if c == nil {
		return "", fmt.Errorf("logs %s: No such container", engine.ShortID(id))
	}
	return labrt.Tail(c.Logs, tail), nil
}

// Networks

func (f *Engine) CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("CreateNetwork", name)
	if err := f.faultLocked("CreateNetwork", name); err != nil {
		return "", err
	}
	if f.networkLocked(name) != nil {
		return "", fmt.Errorf("create network %s: network with name %s already exists", name, name)
	}
	id := f.newID("network", name)
	f.networks[id] = &Network{ID: id, Name: name, Labels: copyLabels(labels)}
	return id, nil
}

func (f *Engine) RemoveNetwork(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveNetwork", id)
	n := f.networkLocked(id)
	if n == nil {
		return nil
	}
	if err := f.faultLocked("RemoveNetwork", n.Name, n.ID); err != nil {
		return err
	}
	for _, c := range f.containers {
		if c.Spec.Network == n.Name || c.Spec.Network == n.ID {
			return fmt.Errorf("remove network %s: error while removing network: network %s id %s has active endpoints", engine.ShortID(n.ID), n.Name, n.ID)
		}
	}
	delete(f.networks, n.ID)
	return nil
}

func (f *Engine) ListNetworks(ctx context.Context, labelFilter map[string]string) ([]network.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListNetworks", "")
	if err := f.faultLocked("ListNetworks"); err != nil {
		return nil, err
	}
	var out []network.Summary
	for _, n := range f.networks {
		if fakes.LabelsMatch(n.Labels, labelFilter) {
			out = append(out, network.Summary{ID: n.ID, Name: n.Name, Driver: "bridge", Labels: copyLabels(n.Labels)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Volumes

func (f *Engine) ListVolumes(ctx context.Context, labelFilter map[string]string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListVolumes", "")
	if err := f.faultLocked("ListVolumes"); err != nil {
		return nil, err
	}
	var out []string
	for name, labels := range f.volumes {
		if fakes.LabelsMatch(labels, labelFilter) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (f *Engine) RemoveVolume(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveVolume", name)
	if err := f.faultLocked("RemoveVolume", name); err != nil {
		return err
	}
	delete(f.volumes, name)
	return nil
}
