package engine

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"
)

// CreateContainer turns a ContainerSpec into the engine's create request:
// what the agent containers need (capabilities, the target's network
// namespace), what the database needs (tmpfs, volumes, health check) and
// ports published on loopback only, on a port the engine picks.
func TestCreateContainerRequest(t *testing.T) {
	d := newDockerd(t)
	d.handle("POST /containers/create", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusCreated, container.CreateResponse{ID: "c0ffee" + strings.Repeat("0", 58)})
	})
	r := d.runtime()
	hc := &container.HealthConfig{Test: []string{"CMD", "pg_isready"}, Interval: time.Second, Retries: 30}
	spec := ContainerSpec{
		Name:         "rttlab-abc-db",
		Image:        "rttlab/postgres:latest",
		Cmd:          []string{"postgres", "-c", "fsync=off"},
		Entrypoint:   []string{"/entry.sh"},
		Env:          []string{"POSTGRES_PASSWORD=x"},
		Labels:       map[string]string{LabelRun: "abc", LabelRole: "db"},
		User:         "postgres",
		Network:      "rttlab-abc",
		Aliases:      []string{"db", "postgres"},
		CapAdd:       []string{"NET_ADMIN"},
		CapDrop:      []string{"ALL"},
		PublishLocal: []string{"5432/tcp"},
		ExposedPorts: []string{"9000/tcp"},
		Init:         true,
		WorkingDir:   "/srv",
		Binds:        []string{"/host/sql:/sql:ro"},
		Volumes:      []string{"/var/lib/postgresql/data"},
		Tmpfs:        []string{"/run:size=64m", "/tmp"},
		Healthcheck:  hc,
		NanoCPUs:     500_000_000,
	}
	id, err := r.CreateContainer(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if id != "c0ffee"+strings.Repeat("0", 58) {
		t.Errorf("id %q", id)
	}
	req := d.only("POST", "/containers/create")
	if got := req.Query.Get("name"); got != "rttlab-abc-db" {
		t.Errorf("name %q", got)
	}
	var body container.CreateRequest
	req.decode(t, &body)
	cfg, host := body.Config, body.HostConfig
	if cfg == nil || host == nil || body.NetworkingConfig == nil {
		t.Fatalf("create body %s", req.Body)
	}
	if cfg.Image != spec.Image || !slices.Equal(cfg.Cmd, spec.Cmd) || !slices.Equal(cfg.Entrypoint, spec.Entrypoint) ||
		!slices.Equal(cfg.Env, spec.Env) || !reflect.DeepEqual(cfg.Labels, spec.Labels) || cfg.User != "postgres" || cfg.WorkingDir != "/srv" {
		t.Errorf("config %+v", cfg)
	}
	if !reflect.DeepEqual(cfg.Healthcheck, hc) {
		t.Errorf("health check %+v, want %+v", cfg.Healthcheck, hc)
	}
	if !reflect.DeepEqual(cfg.Volumes, map[string]struct{}{"/var/lib/postgresql/data": {}}) {
		t.Errorf("volumes %v", cfg.Volumes)
	}
	// Published ports are exposed too.
	if !reflect.DeepEqual(cfg.ExposedPorts, nat.PortSet{"5432/tcp": {}, "9000/tcp": {}}) {
		t.Errorf("exposed %v", cfg.ExposedPorts)
	}
	if want := (nat.PortMap{"5432/tcp": {{HostIP: "127.0.0.1", HostPort: ""}}}); !reflect.DeepEqual(host.PortBindings, want) {
		t.Errorf("port bindings %v, want %v: loopback only, an ephemeral port", host.PortBindings, want)
	}
	// The client spells capabilities the kernel's way, which engines since
	// API 1.40 accept.
	if !slices.Equal(host.CapAdd, []string{"CAP_NET_ADMIN"}) || !slices.Equal(host.CapDrop, []string{"ALL"}) {
		t.Errorf("capabilities +%v -%v", host.CapAdd, host.CapDrop)
	}
	if host.NetworkMode != "rttlab-abc" {
		t.Errorf("network mode %q, want the network joined", host.NetworkMode)
	}
	if !slices.Equal(host.Binds, spec.Binds) {
		t.Errorf("binds %v", host.Binds)
	}
	if !reflect.DeepEqual(host.Tmpfs, map[string]string{"/run": "size=64m", "/tmp": ""}) {
		t.Errorf("tmpfs %v", host.Tmpfs)
	}
	if host.NanoCPUs != 500_000_000 {
		t.Errorf("CPU quota %d, want half a CPU", host.NanoCPUs)
	}
	if host.Init == nil || !*host.Init {
		t.Errorf("init %v", host.Init)
	}
	eps := body.NetworkingConfig.EndpointsConfig
	if len(eps) != 1 || eps["rttlab-abc"] == nil || !slices.Equal(eps["rttlab-abc"].Aliases, []string{"db", "postgres"}) {
		t.Errorf("endpoints %+v", eps)
	}
}

// An agent shares its target's network namespace: no network of its own,
// no aliases, and nothing optional is sent.
func TestCreateContainerInAnotherNamespace(t *testing.T) {
	d := newDockerd(t)
	d.handle("POST /containers/create", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusCreated, container.CreateResponse{ID: "agent1"})
	})
	r := d.runtime()
	if _, err := r.CreateContainer(context.Background(), ContainerSpec{
		Name: "rttlab-abc-agent-app", Image: "rttlab/agent:latest", NetworkMode: "container:app1", CapAdd: []string{"NET_ADMIN"},
	}); err != nil {
		t.Fatal(err)
	}
	var body container.CreateRequest
	d.only("POST", "/containers/create").decode(t, &body)
	if body.HostConfig.NetworkMode != "container:app1" {
		t.Errorf("network mode %q", body.HostConfig.NetworkMode)
	}
	if body.NetworkingConfig != nil && len(body.NetworkingConfig.EndpointsConfig) != 0 {
		t.Errorf("endpoints %+v for a container in another's namespace", body.NetworkingConfig.EndpointsConfig)
	}
	if body.HostConfig.Init != nil || body.HostConfig.PortBindings != nil || body.HostConfig.Tmpfs != nil || body.HostConfig.NanoCPUs != 0 ||
		body.Config.ExposedPorts != nil || body.Config.Volumes != nil || body.Config.Healthcheck != nil {
		t.Errorf("optional settings sent: %s", d.only("POST", "/containers/create").Body)
	}
}

// A missing image is ErrImageMissing naming the image (the advice is to
// build it); a name already taken stays an engine conflict.
func TestCreateContainerErrors(t *testing.T) {
	for _, c := range []struct {
		status       int
		msg          string
		imageMissing bool
		conflict     bool
	}{
		{http.StatusNotFound, "No such image: rttlab/nope:latest", true, false},
		{http.StatusConflict, `Conflict. The container name "/rttlab-abc-db" is already in use`, false, true},
	} {
		d := newDockerd(t)
		d.handle("POST /containers/create", replyError(c.status, c.msg))
		_, err := d.runtime().CreateContainer(context.Background(), ContainerSpec{Name: "rttlab-abc-db", Image: "rttlab/nope:latest"})
		if err == nil {
			t.Fatalf("%d: no error", c.status)
		}
		if errors.Is(err, ErrImageMissing) != c.imageMissing || cerrdefs.IsConflict(err) != c.conflict {
			t.Errorf("%d: %v: image missing %v, conflict %v", c.status, err, errors.Is(err, ErrImageMissing), cerrdefs.IsConflict(err))
		}
		if !strings.HasPrefix(err.Error(), "create rttlab-abc-db: ") {
			t.Errorf("%d: %v does not name the container", c.status, err)
		}
		if c.imageMissing && !strings.Contains(err.Error(), "rttlab/nope:latest") {
			t.Errorf("%v does not name the image", err)
		}
		if c.conflict && !strings.Contains(err.Error(), "already in use") {
			t.Errorf("%v lost the engine's message", err)
		}
	}
}

// Start, kill, stop and remove send what their names say; failures name
// the container by its short id.
func TestContainerLifecycleRequests(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	d := newDockerd(t)
	d.handle("POST /containers/{id}/start", replyNoContent)
	d.handle("POST /containers/{id}/kill", replyNoContent)
	d.handle("POST /containers/{id}/stop", replyNoContent)
	d.handle("DELETE /containers/{id}", replyNoContent)
	r := d.runtime()
	ctx := context.Background()
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	d.only("POST", "/containers/"+id+"/start")
	if err := r.KillContainer(ctx, id, "SIGUSR1"); err != nil {
		t.Fatal(err)
	}
	if got := d.only("POST", "/containers/"+id+"/kill").Query.Get("signal"); got != "SIGUSR1" {
		t.Errorf("kill signal %q", got)
	}
	if err := r.StopContainer(ctx, id, 2500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := d.only("POST", "/containers/"+id+"/stop").Query.Get("t"); got != "2" {
		t.Errorf("stop grace t=%q, want whole seconds: 2", got)
	}
	if err := r.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if q := d.only("DELETE", "/containers/"+id).Query; q.Get("force") != "1" || q.Get("v") != "1" {
		t.Errorf("remove %v, want forced, with its anonymous volumes", q)
	}
}

func TestContainerLifecycleFailures(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	d := newDockerd(t)
	d.handle("POST /containers/{id}/start", replyError(http.StatusInternalServerError, "OCI runtime create failed"))
	d.handle("POST /containers/{id}/kill", replyError(http.StatusConflict, "container is not running"))
	r := d.runtime()
	ctx := context.Background()
	if err := r.StartContainer(ctx, id); err == nil || err.Error() != "start 0123456789ab: Error response from daemon: OCI runtime create failed" {
		t.Errorf("start: %v", err)
	}
	// Kill is not forgiving like stop and remove: a container that is not
	// running is the caller's to judge.
	if err := r.KillContainer(ctx, id, "SIGTERM"); err == nil || !strings.HasPrefix(err.Error(), "kill 0123456789ab: ") || !cerrdefs.IsConflict(err) {
		t.Errorf("kill: %v", err)
	}
}

func TestInspectContainer(t *testing.T) {
	d := newDockerd(t)
	d.handle("GET /containers/{id}/json", func(w http.ResponseWriter, r *http.Request) {
		switch id := r.PathValue("id"); id {
		case "db1":
			writeJSON(w, http.StatusOK, container.InspectResponse{
				ContainerJSONBase: &container.ContainerJSONBase{ID: "db1", Name: "/rttlab-abc-db", State: &container.State{Status: "running", Running: true, Pid: 42}},
			})
		case "gone":
			engineError(w, http.StatusNotFound, "No such container: gone")
		default:
			engineError(w, http.StatusInternalServerError, "boom")
		}
	})
	r := d.runtime()
	ctx := context.Background()
	c, err := r.InspectContainer(ctx, "db1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "/rttlab-abc-db" || c.State == nil || !c.State.Running || c.State.Pid != 42 {
		t.Errorf("inspect %+v", c.ContainerJSONBase)
	}
	if _, err := r.InspectContainer(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing container: %v, want ErrNotFound", err)
	}
	if _, err := r.InspectContainer(ctx, "other"); err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("engine failure: %v", err)
	}
}

// ListContainers asks for stopped containers too (a crashed app must be
// found and removed) and filters by label as the engine does.
func TestListContainers(t *testing.T) {
	d := newDockerd(t)
	d.handle("GET /containers/json", replyJSON([]container.Summary{
		{ID: "a1", Names: []string{"/rttlab-abc-db"}, State: "running", Labels: map[string]string{LabelRun: "abc"}},
		{ID: "b2", Names: []string{"/rttlab-abc-app"}, State: "exited", Labels: map[string]string{LabelRun: "abc"}},
	}))
	cs, err := d.runtime().ListContainers(context.Background(), map[string]string{LabelRun: "abc", LabelRole: ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].ID != "a1" || cs[1].State != "exited" {
		t.Errorf("containers %+v", cs)
	}
	req := d.only("GET", "/containers/json")
	if req.Query.Get("all") != "1" {
		t.Errorf("query %v: stopped containers are not listed", req.Query)
	}
	if got := req.labelFilter(t); !reflect.DeepEqual(got, map[string]bool{"io.rttlab.run=abc": true, "io.rttlab.role": true}) {
		t.Errorf("label filter %v", got)
	}

	d = newDockerd(t)
	d.handle("GET /containers/json", replyError(http.StatusInternalServerError, "boom"))
	if _, err := d.runtime().ListContainers(context.Background(), nil); err == nil || !strings.HasPrefix(err.Error(), "list containers: ") {
		t.Errorf("list failure: %v", err)
	}
}

// Logs interleaves stdout and stderr in the order the engine sent them,
// from its multiplexed stream, and keeps what it read before a broken
// frame.
func TestLogs(t *testing.T) {
	d := newDockerd(t)
	d.handle("GET /containers/{id}/logs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
		out := stdcopy.NewStdWriter(w, stdcopy.Stdout)
		errw := stdcopy.NewStdWriter(w, stdcopy.Stderr)
		out.Write([]byte("listening on 5432\n"))
		errw.Write([]byte("FATAL: role \"x\" does not exist\n"))
		out.Write([]byte("shutting down\n"))
		if r.PathValue("id") == "broken" {
			w.Write([]byte{9, 0, 0, 0, 0, 0, 0, 4, 'o', 'o', 'p', 's'}) // no such stream
		}
	})
	d.handle("GET /containers/gone/logs", replyError(http.StatusNotFound, "No such container: gone"))
	r := d.runtime()
	ctx := context.Background()
	got, err := r.Logs(ctx, "db1", 50)
	if err != nil {
		t.Fatal(err)
	}
	if want := "listening on 5432\nFATAL: role \"x\" does not exist\nshutting down\n"; got != want {
		t.Errorf("logs %q, want %q", got, want)
	}
	q := d.only("GET", "/containers/db1/logs").Query
	if q.Get("stdout") != "1" || q.Get("stderr") != "1" || q.Get("tail") != "50" || q.Get("follow") != "" {
		t.Errorf("logs query %v", q)
	}
	got, err = r.Logs(ctx, "broken", 10)
	if err == nil || !strings.HasPrefix(err.Error(), "logs broken: ") || !strings.HasSuffix(got, "shutting down\n") {
		t.Errorf("broken stream: %q, %v", got, err)
	}
	if _, err := r.Logs(ctx, "gone", 10); err == nil || !cerrdefs.IsNotFound(err) {
		t.Errorf("missing container: %v", err)
	}
}

// CopyToContainer sends the tarball as is to the archive endpoint of the
// container and folder, refusing to replace a folder by a file.
func TestCopyToContainer(t *testing.T) {
	d := newDockerd(t)
	d.handle("PUT /containers/{id}/archive", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "stopped" {
			engineError(w, http.StatusForbidden, "container is marked for removal")
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	r := d.runtime()
	tarball := "pretend this is a tar archive"
	if err := r.CopyToContainer(context.Background(), "db1", "/docker-entrypoint-initdb.d", strings.NewReader(tarball)); err != nil {
		t.Fatal(err)
	}
	req := d.only("PUT", "/containers/db1/archive")
	if req.Query.Get("path") != "/docker-entrypoint-initdb.d" || req.Query.Get("noOverwriteDirNonDir") != "true" {
		t.Errorf("archive query %v", req.Query)
	}
	if string(req.Body) != tarball {
		t.Errorf("archive body %q", req.Body)
	}
	err := r.CopyToContainer(context.Background(), "stopped", "/x", strings.NewReader(tarball))
	if err == nil || !strings.HasPrefix(err.Error(), "copy into stopped:/x: ") {
		t.Errorf("copy into a stopped container: %v", err)
	}
}
