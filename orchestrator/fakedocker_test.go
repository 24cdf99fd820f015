package orchestrator

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"
	"github.com/rttlab/rttlab/orchestrator/engine"
)

// fakeDocker is an in-memory Docker engine for unit tests. It keeps
// containers (labels, state, IPs, logs), networks, volumes and images the
// way the engine does where the orchestrator relies on it:
//
//   - container names are unique, so a stack started again before the old
//     one is removed fails as it would on an engine;
//   - a network with containers attached cannot be removed;
//   - a container needs an existing image and, when it joins one, network;
//   - Exec needs a running container and honours a cancelled context.
//
// Exec is answered by handlers registered per command prefix (see handle),
// so a test scripts what `rttlab agent ctl`, `agent ping`, `agent load`,
// psql and the rest print and return. Faults: failOn makes calls fail,
// exit and crashOnStart make containers stop.
type fakeDocker struct {
	mu sync.Mutex

	info       engine.EngineInfo
	seq        int
	containers map[string]*fakeContainer // by ID
	networks   map[string]*fakeNetwork   // by ID
	volumes    map[string]map[string]string
	images     map[string]*fakeImage // by reference
	pullable   map[string]bool
	handlers   map[string]execHandler
	// streams: command prefixes whose handlers read stdin as it comes
	// (execCall.StdinR) instead of after it closed (execCall.Stdin).
	streams map[string]bool
	faults  []*fakeFault
	crashes []*fakeFault
	// hostPort answers every published port (PublishLocal) with this host
	// port on 127.0.0.1.
	hostPort string
	// ipByService fixes the IP of containers by compose service name; the
	// others get 10.89.0.N in creation order.
	ipByService map[string]string

	created   []engine.ContainerSpec // every CreateContainer that succeeded
	calls     []string               // "Op subject" of every call, in order
	execs     []fakeExec
	unhandled []string
	builds    []fakeBuild
	// copied holds, per container name, the files CopyToContainer
	// extracted (path inside the container -> content).
	copied map[string]map[string][]byte
}

type fakeContainer struct {
	ID       string
	Spec     engine.ContainerSpec
	seq      int
	State    string // created, running, exited
	ExitCode int
	Logs     string
	IP       string
}

type fakeNetwork struct {
	ID     string
	Name   string
	Labels map[string]string
}

type fakeImage struct {
	ID     string
	Labels map[string]string
}

// fakeExec is one Exec the fake answered.
type fakeExec struct {
	Container string // name
	Cmd       []string
}

// fakeBuild is one BuildImage: its options and the context's file names.
type fakeBuild struct {
	Opts  engine.BuildOptions
	Files []string
}

// fakeFault makes matching calls fail (or, as a crash, makes matching
// containers exit when started).
type fakeFault struct {
	op    string
	match string // the end of a subject (see failOn); "" any
	times int    // left; negative: forever
	err   error
	code  int    // crashes: exit code
	logs  string // crashes: what the container printed
	hits  int
}

// execCall is what an exec handler sees.
type execCall struct {
	Container fakeContainer // a copy, as it was when the exec started
	Cmd       []string
	Env       []string
	User      string
	Stdin     []byte
	// StdinR is stdin unread, for handlers registered with handleStream.
	StdinR io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Flag returns the value following name in the command line, or "".
func (x *execCall) Flag(name string) string {
	for i := 0; i+1 < len(x.Cmd); i++ {
		if x.Cmd[i] == name {
			return x.Cmd[i+1]
		}
	}
	return ""
}

// Flags returns every value following name in the command line.
func (x *execCall) Flags(name string) []string {
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
func (x *execCall) Service() string { return x.Container.Spec.Labels[engine.LabelService] }

// execHandler answers an Exec: what it writes to Stdout and Stderr, its
// exit code, and an error for a failure of the exec itself.
type execHandler func(ctx context.Context, x *execCall) (int, error)

var _ engine.Docker = (*fakeDocker)(nil)

func newFakeDocker() *fakeDocker {
	return &fakeDocker{
		info: engine.EngineInfo{Version: "20.10.24+fake", APIVersion: "1.41", OS: "linux", Arch: "amd64",
			Kernel: "6.1.0-fake", CPUs: 2, MemBytes: 4 << 30, Root: "/var/lib/docker"},
		containers:  map[string]*fakeContainer{},
		networks:    map[string]*fakeNetwork{},
		volumes:     map[string]map[string]string{},
		images:      map[string]*fakeImage{},
		pullable:    map[string]bool{},
		handlers:    map[string]execHandler{},
		streams:     map[string]bool{},
		ipByService: map[string]string{},
	}
}

func (f *fakeDocker) newID(kind, name string) string {
	f.seq++
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", kind, name, f.seq)))
	return hex.EncodeToString(h[:])
}

// handle registers h for commands starting with prefix (words separated
// by spaces; /usr/local/bin/rttlab is written rttlab). The longest
// matching prefix answers; a later registration replaces an earlier one.
func (f *fakeDocker) handle(prefix string, h execHandler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[prefix] = h
	delete(f.streams, prefix)
}

// handleStream is handle for a command that reads stdin while it runs
// (x.StdinR), such as a capture stopped by closing its stdin.
func (f *fakeDocker) handleStream(prefix string, h execHandler) {
	f.handle(prefix, h)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streams[prefix] = true
}

// failOn makes the next times calls of op whose subject ends with match
// fail with err (times < 0: every call; match "" any call). Subjects: the
// container's name and ID, the network's name and ID, the image
// reference, the volume name; Exec also matches when its command line
// contains match.
func (f *fakeDocker) failOn(op, match string, times int, err error) *fakeFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := &fakeFault{op: op, match: match, times: times, err: err}
	f.faults = append(f.faults, ft)
	return ft
}

// crashOnStart makes the next times containers whose name ends with match
// exit with code right after they start, having printed logs.
func (f *fakeDocker) crashOnStart(match string, times, code int, logs string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashes = append(f.crashes, &fakeFault{match: match, times: times, code: code, logs: logs})
}

// exit makes every running container whose name ends with match exit.
func (f *fakeDocker) exit(match string, code int, logs string) int {
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

func (f *fakeDocker) addImage(ref string, labels map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addImageLocked(ref, labels)
}

func (f *fakeDocker) addImageLocked(ref string, labels map[string]string) string {
	id := "sha256:" + f.newID("image", ref)
	f.images[ref] = &fakeImage{ID: id, Labels: labels}
	return id
}

func (f *fakeDocker) addVolume(name string, labels map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.volumes[name] = labels
}

// faultLocked returns the error of the first armed fault of op matching a
// subject, and uses it up.
func (f *fakeDocker) faultLocked(op string, subjects ...string) error {
	return f.faultMatchLocked(op, func(match string) bool { return matchAny(match, subjects) })
}

func (f *fakeDocker) faultMatchLocked(op string, matches func(match string) bool) error {
	for _, ft := range f.faults {
		if ft.op != op || ft.times == 0 || !matches(ft.match) {
			continue
		}
		if ft.times > 0 {
			ft.times--
		}
		ft.hits++
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

func (f *fakeDocker) record(op, subject string) {
	f.calls = append(f.calls, op+" "+subject)
}

// Calls returns "Op subject" for every call so far.
func (f *fakeDocker) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// countCalls counts the calls of op.
func (f *fakeDocker) countCalls(op string) int {
	n := 0
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, op+" ") {
			n++
		}
	}
	return n
}

// Created returns the spec of every container created so far.
// Created returns the specs of the containers created so far, without
// the short-lived ones that only answer one question (the kernel netem
// probe, a rule sweep).
func (f *fakeDocker) Created() []engine.ContainerSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.ContainerSpec
	for _, c := range f.created {
		if c.Labels[engine.LabelRole] != roleOnce {
			out = append(out, c)
		}
	}
	return out
}

// Execs returns every exec answered so far.
func (f *fakeDocker) Execs() []fakeExec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeExec(nil), f.execs...)
}

// Live returns the names of the containers and networks that exist.
func (f *fakeDocker) Live() (containers, networks []string) {
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

// requireEmpty fails the test when any container or network is left.
func (f *fakeDocker) requireEmpty(t testing.TB) {
	t.Helper()
	cs, ns := f.Live()
	if len(cs) > 0 || len(ns) > 0 {
		t.Fatalf("left behind: containers %v, networks %v", cs, ns)
	}
}

func (f *fakeDocker) sortedContainersLocked() []*fakeContainer {
	out := make([]*fakeContainer, 0, len(f.containers))
	for _, c := range f.containers {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// lookupLocked finds a container by ID or name.
func (f *fakeDocker) lookupLocked(idOrName string) *fakeContainer {
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

func (f *fakeDocker) networkLocked(idOrName string) *fakeNetwork {
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

func labelsMatch(have, filter map[string]string) bool {
	for k, v := range filter {
		hv, ok := have[k]
		if !ok || (v != "" && hv != v) {
			return false
		}
	}
	return true
}

func copyLabels(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Engine

func (f *fakeDocker) EngineInfo(ctx context.Context) (engine.EngineInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("EngineInfo", "")
	if err := f.faultLocked("EngineInfo"); err != nil {
		return engine.EngineInfo{}, err
	}
	return f.info, nil
}

// ImageStore

func (f *fakeDocker) ImageID(ctx context.Context, ref string) (string, error) {
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

func (f *fakeDocker) PullImage(ctx context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("PullImage", ref)
	if err := f.faultLocked("PullImage", ref); err != nil {
		return err
	}
	if !f.pullable[ref] {
		return fmt.Errorf("pull %s: Error response from daemon: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io: no such host", ref)
	}
	f.addImageLocked(ref, nil)
	return nil
}

func (f *fakeDocker) ImportImage(ctx context.Context, tarball io.Reader, ref string) error {
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

func (f *fakeDocker) BuildImage(ctx context.Context, tarCtx io.Reader, o engine.BuildOptions) (engine.BuildResult, error) {
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
	f.builds = append(f.builds, fakeBuild{Opts: o, Files: files})
	if err := f.faultLocked("BuildImage", o.Tag); err != nil {
		return engine.BuildResult{}, fmt.Errorf("build %s: %w", o.Tag, err)
	}
	if o.Log != nil {
		fmt.Fprintf(o.Log, "Step 1/1 : FROM %s\nSuccessfully tagged %s\n", engine.BaseImage, o.Tag)
	}
	id := f.addImageLocked(o.Tag, copyLabels(o.Labels))
	return engine.BuildResult{ID: id, Duration: time.Millisecond}, nil
}

func (f *fakeDocker) RemoveImages(ctx context.Context, labelFilter map[string]string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveImages", "")
	var refs []string
	for ref, img := range f.images {
		if labelsMatch(img.Labels, labelFilter) && engine.BuiltByRttlab([]string{ref}, img.Labels) {
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

func (f *fakeDocker) CreateContainer(ctx context.Context, s engine.ContainerSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("CreateContainer", s.Name)
	if err := f.faultLocked("CreateContainer", s.Name); err != nil {
		return "", err
	}
	if s.Name != "" && f.lookupLocked(s.Name) != nil {
		return "", fmt.Errorf("create %s: Conflict. The container name \"/%s\" is already in use", s.Name, s.Name)
	}
	if _, ok := f.images[s.Image]; !ok {
		return "", fmt.Errorf("create %s: image %s is missing: run `rttlab images build`: No such image: %s", s.Name, s.Image, s.Image)
	}
	if s.Network != "" && f.networkLocked(s.Network) == nil {
		return "", fmt.Errorf("create %s: network %s not found", s.Name, s.Network)
	}
	if target, ok := strings.CutPrefix(s.NetworkMode, "container:"); ok && f.lookupLocked(target) == nil {
		return "", fmt.Errorf("create %s: joining network namespace of container: No such container: %s", s.Name, target)
	}
	id := f.newID("container", s.Name)
	s.Labels = copyLabels(s.Labels)
	f.containers[id] = &fakeContainer{ID: id, Spec: s, seq: f.seq, State: container.StateCreated}
	f.created = append(f.created, s)
	return id, nil
}

func (f *fakeDocker) StartContainer(ctx context.Context, id string) error {
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
		c.IP = f.ipByService[c.Spec.Labels[engine.LabelService]]
		if c.IP == "" {
			c.IP = netip.AddrFrom4([4]byte{10, 89, 0, byte(1 + c.seq%250)}).String()
		}
	}
	for _, cr := range f.crashes {
		if cr.times != 0 && matchAny(cr.match, []string{c.Spec.Name}) {
			if cr.times > 0 {
				cr.times--
			}
			cr.hits++
			c.State, c.ExitCode, c.Logs = container.StateExited, cr.code, c.Logs+cr.logs
			break
		}
	}
	return nil
}

func (f *fakeDocker) InspectContainer(ctx context.Context, id string) (container.InspectResponse, error) {
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
				ns.Ports[nat.Port(p)] = []nat.PortBinding{{HostIP: "127.0.0.1", HostPort: f.hostPort}}
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

func (f *fakeDocker) StopContainer(ctx context.Context, id string, grace time.Duration) error {
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

func (f *fakeDocker) KillContainer(ctx context.Context, id, signal string) error {
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

func (f *fakeDocker) RemoveContainer(ctx context.Context, id string) error {
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

func (f *fakeDocker) ListContainers(ctx context.Context, labelFilter map[string]string) ([]container.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListContainers", "")
	if err := f.faultLocked("ListContainers"); err != nil {
		return nil, err
	}
	var out []container.Summary
	for _, c := range f.sortedContainersLocked() {
		if !labelsMatch(c.Spec.Labels, labelFilter) {
			continue
		}
		out = append(out, container.Summary{ID: c.ID, Names: []string{"/" + c.Spec.Name}, Image: c.Spec.Image,
			Labels: copyLabels(c.Spec.Labels), State: c.State})
	}
	return out, nil
}

func (f *fakeDocker) Exec(ctx context.Context, id string, s engine.ExecSpec) (int, error) {
	key := execKey(s.Cmd)
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
	f.execs = append(f.execs, fakeExec{Container: c.Spec.Name, Cmd: append([]string(nil), s.Cmd...)})
	h := f.handlerLocked(key)
	stream := false
	for p := range f.streams {
		stream = stream || key == p || strings.HasPrefix(key, p+" ")
	}
	if h == nil {
		f.unhandled = append(f.unhandled, key)
	}
	x := &execCall{Container: *c, Cmd: s.Cmd, Env: s.Env, User: s.User, Stdout: s.Stdout, Stderr: s.Stderr}
	x.Container.Spec.Labels = copyLabels(c.Spec.Labels)
	f.mu.Unlock()

	if x.Stdout == nil {
		x.Stdout = io.Discard
	}
	if x.Stderr == nil {
		x.Stderr = io.Discard
	}
	if s.Stdin != nil && stream {
		x.StdinR = s.Stdin
	} else if s.Stdin != nil {
		b, err := io.ReadAll(s.Stdin)
		if err != nil {
			return -1, err
		}
		x.Stdin = b
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

func (f *fakeDocker) CopyToContainer(ctx context.Context, id, dir string, tarball io.Reader) error {
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
	tr := tar.NewReader(tarball)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("copy into %s: %w", engine.ShortID(id), err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if f.copied == nil {
			f.copied = map[string]map[string][]byte{}
		}
		if f.copied[c.Spec.Name] == nil {
			f.copied[c.Spec.Name] = map[string][]byte{}
		}
		f.copied[c.Spec.Name][path.Join(dir, h.Name)] = b
	}
}

// execKey is the command line handlers are matched against.
func execKey(cmd []string) string {
	parts := append([]string(nil), cmd...)
	if len(parts) > 0 && parts[0] == "/usr/local/bin/rttlab" {
		parts[0] = "rttlab"
	}
	return strings.Join(parts, " ")
}

func (f *fakeDocker) handlerLocked(key string) execHandler {
	best := ""
	var h execHandler
	for p, ph := range f.handlers {
		if (key == p || strings.HasPrefix(key, p+" ")) && len(p) >= len(best) {
			best, h = p, ph
		}
	}
	return h
}

func (f *fakeDocker) Logs(ctx context.Context, id string, tail int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Logs", id)
	c := f.lookupLocked(id)
	if c == nil {
		return "", fmt.Errorf("logs %s: No such container", engine.ShortID(id))
	}
	ls := strings.Split(strings.TrimRight(c.Logs, "\n"), "\n")
	if len(ls) > tail {
		ls = ls[len(ls)-tail:]
	}
	return strings.Join(ls, "\n"), nil
}

// Networks

func (f *fakeDocker) CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error) {
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
	f.networks[id] = &fakeNetwork{ID: id, Name: name, Labels: copyLabels(labels)}
	return id, nil
}

func (f *fakeDocker) RemoveNetwork(ctx context.Context, id string) error {
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

func (f *fakeDocker) ListNetworks(ctx context.Context, labelFilter map[string]string) ([]network.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListNetworks", "")
	if err := f.faultLocked("ListNetworks"); err != nil {
		return nil, err
	}
	var out []network.Summary
	for _, n := range f.networks {
		if labelsMatch(n.Labels, labelFilter) {
			out = append(out, network.Summary{ID: n.ID, Name: n.Name, Driver: "bridge", Labels: copyLabels(n.Labels)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Volumes

func (f *fakeDocker) ListVolumes(ctx context.Context, labelFilter map[string]string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListVolumes", "")
	if err := f.faultLocked("ListVolumes"); err != nil {
		return nil, err
	}
	var out []string
	for name, labels := range f.volumes {
		if labelsMatch(labels, labelFilter) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (f *fakeDocker) RemoveVolume(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveVolume", name)
	if err := f.faultLocked("RemoveVolume", name); err != nil {
		return err
	}
	delete(f.volumes, name)
	return nil
}

// The fake itself behaves like the engine where the orchestrator relies
// on it; these tests pin that down so a test passing on the fake means
// something.
func TestFakeDockerBehavesLikeAnEngine(t *testing.T) {
	ctx := context.Background()
	f := newFakeDocker()
	f.addImage("img:1", nil)

	if _, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "a", Image: "missing:1"}); err == nil || !strings.Contains(err.Error(), "is missing") {
		t.Fatalf("missing image: %v", err)
	}
	if _, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "a", Image: "img:1", Network: "nonet"}); err == nil {
		t.Fatal("a missing network must be refused")
	}
	nid, err := f.CreateNetwork(ctx, "net", map[string]string{engine.LabelRun: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateNetwork(ctx, "net", nil); err == nil {
		t.Fatal("duplicate network name accepted")
	}
	a, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "a", Image: "img:1", Network: "net", Labels: map[string]string{engine.LabelRun: "r1", engine.LabelService: "db"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "a", Image: "img:1"}); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("exec in a created container: %v", err)
	}
	side, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "side", Image: "img:1", NetworkMode: "container:" + a})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.StartContainer(ctx, side); err == nil {
		t.Fatal("joining the namespace of a stopped container must fail")
	}
	if err := f.StartContainer(ctx, a); err != nil {
		t.Fatal(err)
	}
	ins, err := f.InspectContainer(ctx, a)
	if err != nil || !ins.State.Running || ins.NetworkSettings.Networks["net"].IPAddress == "" {
		t.Fatalf("inspect %+v %v", ins.State, err)
	}

	// Exec: handlers by longest prefix, stdin passed, unknown commands 127.
	f.handle("rttlab agent", func(ctx context.Context, x *execCall) (int, error) { return 3, nil })
	f.handle("rttlab agent ctl", func(ctx context.Context, x *execCall) (int, error) {
		fmt.Fprintf(x.Stdout, "%s|%s|%s", x.Flag("--delay"), x.Stdin, x.Service())
		return 0, nil
	})
	var out bytes.Buffer
	code, err := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ctl", "set", "--delay", "5ns"}, Stdin: strings.NewReader("in"), Stdout: &out})
	if err != nil || code != 0 || out.String() != "5ns|in|db" {
		t.Fatalf("ctl exec: %d %v %q", code, err, out.String())
	}
	if code, _ := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ping"}}); code != 3 {
		t.Fatalf("prefix handler: code %d", code)
	}
	var errb bytes.Buffer
	if code, _ := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"nope"}, Stderr: &errb}); code != 127 || len(f.unhandled) != 1 {
		t.Fatalf("unknown command: %d %q", code, errb.String())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Exec(cctx, a, engine.ExecSpec{Cmd: []string{"rttlab", "agent"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("exec with a cancelled context: %v", err)
	}

	// Faults are used up; crashes stop containers; logs are kept.
	boom := errors.New("boom")
	ft := f.failOn("Exec", "agent ping", 1, boom)
	if _, err := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"rttlab", "agent", "ping"}}); !errors.Is(err, boom) {
		t.Fatalf("fault: %v", err)
	}
	if _, err := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"rttlab", "agent", "ping"}}); err != nil || ft.hits != 1 {
		t.Fatalf("fault used once: %v, hits %d", err, ft.hits)
	}
	if n := f.exit("a", 2, "FATAL: out of memory\n"); n != 1 {
		t.Fatalf("exit hit %d containers", n)
	}
	if err := CheckRunning(ctx, f, &Member{ID: a, Name: "a"}); !errors.Is(err, ErrContainerExited) || !strings.Contains(err.Error(), "out of memory") || !strings.Contains(err.Error(), "exit code 2") {
		t.Fatalf("CheckRunning after exit: %v", err)
	}

	// Labels filter like the engine's: key only, or key=value.
	if cs, _ := f.ListContainers(ctx, map[string]string{engine.LabelRun: ""}); len(cs) != 1 || cs[0].Names[0] != "/a" || cs[0].State != "exited" {
		t.Fatalf("list by key: %+v", cs)
	}
	if cs, _ := f.ListContainers(ctx, map[string]string{engine.LabelRun: "r2"}); len(cs) != 0 {
		t.Fatalf("list by value: %+v", cs)
	}
	// A network with a container attached stays.
	if err := f.RemoveNetwork(ctx, nid); err == nil || !strings.Contains(err.Error(), "active endpoints") {
		t.Fatalf("remove busy network: %v", err)
	}
	for _, id := range []string{a, side} {
		if err := f.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.RemoveNetwork(ctx, nid); err != nil {
		t.Fatal(err)
	}
	f.requireEmpty(t)
}
