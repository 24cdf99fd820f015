package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/compose"
	"github.com/rttlab/rttlab/internal/conc"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// NewRunID returns a fresh run id: 10 hex digits.
func NewRunID() string {
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// NewPassword returns a fresh database password (never a fixed one).
func NewPassword() string {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// ServiceMeta is the x-rttlab extension of a compose service.
type ServiceMeta struct {
	Role   string `yaml:"role" json:"role"`
	Shaped bool   `yaml:"shaped" json:"shaped"`
}

// LoadStackFile loads a compose file from the embedded compose folder with
// the given environment.
func LoadStackFile(ctx context.Context, file string, env map[string]string) (*types.Project, error) {
	data, err := fs.ReadFile(compose.Files, file)
	if err != nil {
		return nil, fmt.Errorf("compose/%s: %w", file, err)
	}
	details := types.ConfigDetails{
		WorkingDir:  "compose",
		ConfigFiles: []types.ConfigFile{{Filename: "compose/" + file, Content: data}},
		Environment: env,
	}
	p, err := loader.LoadWithContext(ctx, details, func(o *loader.Options) {
		o.SkipResolveEnvironment = false
		o.ResolvePaths = false
		o.SetProjectName("rttlab", true)
	})
	if err != nil {
		return nil, fmt.Errorf("compose/%s: %w", file, err)
	}
	return p, nil
}

func serviceMeta(s types.ServiceConfig) (ServiceMeta, error) {
	var m ServiceMeta
	raw, ok := s.Extensions["x-rttlab"]
	if !ok {
		return m, nil
	}
	mm, ok := raw.(map[string]any)
	if !ok {
		return m, fmt.Errorf("service %s: x-rttlab must be a mapping", s.Name)
	}
	if r, ok := mm["role"].(string); ok {
		m.Role = r
	}
	if b, ok := mm["shaped"].(bool); ok {
		m.Shaped = b
	}
	return m, nil
}

// StackOptions configure StartStack.
type StackOptions struct {
	RunID  string
	Target apps.Target
	// Up marks a stack started by `rttlab up` (found again by `shape`,
	// `down`).
	Up bool
	// Publish the app port on 127.0.0.1 (an ephemeral port).
	Publish bool
	// ReadyTimeout bounds database and app start-up.
	ReadyTimeout time.Duration
	// Platform the database and the app run (settled against the engine:
	// engine.Platform.On); zero: the engine's own, unnamed.
	Platform engine.Platform
}

// Member is one container of a stack.
type Member struct {
	Service string
	Role    string
	Shaped  bool
	ID      string
	Name    string
	IP      string
	// NetNS is its network namespace in the runtime's terms, for what
	// starts beside it; set by StartOn.
	NetNS runtime.NetNS
	// Published maps its published ports ("8080/tcp") to the host:port
	// that reaches each from the controller.
	Published map[string]string
	// Node is the host it runs on, where the runtime has several.
	Node string
	// Adopted is set for a user's member found where it runs (a
	// running target): the lab never started it and never removes it;
	// Instance is what ran when the run found it.
	Adopted  bool
	Instance runtime.Instance
}

// Stack is a started database + app on a private network.
type Stack struct {
	RunID     string
	Target    apps.Target
	NetworkID string
	Network   string
	// DB reaches the stack's PostgreSQL: rttlab's own image with a fresh
	// password, or a user's compose database with its credentials.
	DB DBCredentials
	// NoStatements, when set, says why the database cannot count the
	// app's statements (pg_stat_statements not loaded in a user's
	// database): counts are then reported as unavailable.
	NoStatements string
	Members      []*Member
	// AppURL reaches the app from the host (published on 127.0.0.1), or
	// is empty when not published.
	AppURL string
	// AppAddr is the app's address on the private network (ip:port).
	AppAddr string
	// Platform the database and the app run; rttlab's agents run its
	// Native one.
	Platform engine.Platform
}

// Image is the tag of rttlab's image of app on the stack's platform.
func (s *Stack) Image(app string) string { return s.Platform.ImageRef(app) }

// MemberPlatform is the platform a container of image is created with in
// the stack: on a foreign platform, the engine's own for rttlab's agent
// image (emulation cannot shape, and the agents measure) and the stack's
// for everything else; on the engine's own, none named, so that a user's
// image (an --app-image, a compose service) runs as it always did.
func (s *Stack) MemberPlatform(image string) engine.Platform {
	if !s.Platform.Foreign() {
		return engine.Platform{}
	}
	if image == AgentImage {
		return s.Platform.Native()
	}
	return s.Platform
}

// BaseURL reaches the app from the host: the published port when there
// is one, else its private address.
func (s *Stack) BaseURL() string {
	if s.AppURL != "" {
		return s.AppURL
	}
	return "http://" + s.AppAddr
}

// OneHost says whether the stack's app and database run on one host,
// whose clock both their captures read: always on Docker; on a cluster,
// when both are on one node.
func (s *Stack) OneHost() bool {
	app, db := s.Role("app"), s.Role("db")
	return app == nil || db == nil || app.Node == db.Node
}

// Hosts lists the hosts the stack's shaped members run on, each once, in
// the members' order ("" for a runtime's only host).
func (st *Stack) Hosts() []string {
	var hosts []string
	for _, m := range st.Members {
		if m.Shaped && !slices.Contains(hosts, m.Node) {
			hosts = append(hosts, m.Node)
		}
	}
	return hosts
}

// Role returns the member with the given role.
func (s *Stack) Role(role string) *Member {
	for _, m := range s.Members {
		if m.Role == role {
			return m
		}
	}
	return nil
}

// RunLabels returns the labels every object of the run carries.
func RunLabels(runID string, extra map[string]string) map[string]string {
	l := map[string]string{engine.LabelRun: runID}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// ReadyLimit is how long a stack's database or app may take to become
// ready on the engine's own platform; every wait for a member to start
// or answer takes its limit through engine.Platform.Limit, longer where
// the platform runs under emulation, so that a stack of another platform
// is not given up while it boots.
const ReadyLimit = 3 * time.Minute

// StartStack creates the private network (on a runtime that makes one
// per run: runtime.Network) and the stack's members in dependency order,
// and waits until the database and the app are ready. On any failure it
// removes everything it created.
func StartStack(ctx context.Context, d runtime.Runtime, o StackOptions) (st *Stack, err error) {
	if o.RunID == "" {
		o.RunID = NewRunID()
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = o.Platform.Limit(ReadyLimit)
	}
	st = &Stack{RunID: o.RunID, Target: o.Target, DB: RttlabDB(NewPassword()), Platform: o.Platform}
	defer func() {
		if err != nil {
			st.RemoveJoin(ctx, d, &err)
		}
	}()
	if o.Target.Meta.Running != nil {
		return st, adoptStack(ctx, d, st, o)
	}
	proj, err := stackProject(ctx, st, o.Target)
	if err != nil {
		return st, err
	}
	extra := map[string]string{}
	if o.Up {
		extra[engine.LabelStack] = "up"
	}
	if n, ok := d.(runtime.Network); ok {
		st.Network = "rttlab-" + o.RunID
		st.NetworkID, err = n.CreateNetwork(ctx, st.Network, NetworkLabels(o.RunID, extra))
		if err != nil {
			return st, err
		}
	}
	order, err := serviceOrder(proj)
	if err != nil {
		return st, err
	}
	ss := &stackStart{d: d, st: st, o: o, proj: proj, extra: extra, started: map[string]*Member{}}
	for _, svc := range order {
		if err := ss.startMember(ctx, svc); err != nil {
			return st, err
		}
	}
	return st, nil
}

// memberName is the name of the member of service: rttlab-<run>-<service>.
func (st *Stack) memberName(service string) string {
	return fmt.Sprintf("rttlab-%s-%s", st.RunID, service)
}

// memberLabels are the labels of the member of service: the run's, extra,
// the role and the service.
func (st *Stack) memberLabels(service, role string, extra map[string]string) map[string]string {
	l := RunLabels(st.RunID, extra)
	l[engine.LabelRole] = role
	l[engine.LabelService] = service
	return l
}

// StartOn starts one member of st from spec (image, command,
// environment, limits) on a runtime: named rttlab-<run>-<service>,
// labelled with the run, the role, the service and extra, reached by the
// service's name on the lab's network. The member joins st.Members as
// soon as the runtime gave it an ID, so that removing the stack removes
// it whatever fails next; its address, network namespace and published
// ports are the runtime's answer. The one place every study starts a
// member of a stack.
func (st *Stack) StartOn(ctx context.Context, rt runtime.Members, service, role string, shaped bool, spec runtime.MemberSpec, extra map[string]string) (*Member, error) {
	spec.Name, spec.Labels = st.memberName(service), st.memberLabels(service, role, extra)
	spec.Role, spec.Aliases = role, []string{service}
	if spec.Platform == "" {
		spec.Platform = st.MemberPlatform(spec.Image).String()
	}
	rm, err := rt.StartMember(ctx, spec)
	if rm.ID == "" {
		return nil, err
	}
	m := &Member{Service: service, Role: role, Shaped: shaped, ID: rm.ID, Name: spec.Name, IP: rm.Addr, NetNS: rm.NetNS, Published: rm.Published, Node: rm.Node}
	st.Members = append(st.Members, m)
	return m, err
}

// mergeLabels adds b's labels to a (a new map when a is nil).
func mergeLabels(a, b map[string]string) map[string]string {
	if a == nil {
		a = map[string]string{}
	}
	for k, v := range b {
		a[k] = v
	}
	return a
}

// stackStart is what starting a stack's members shares: the stack so far,
// its options and project, the labels of every member, and the members
// started by service.
type stackStart struct {
	d       runtime.Runtime
	st      *Stack
	o       StackOptions
	proj    *types.Project
	extra   map[string]string
	started map[string]*Member
}

// startMember creates and starts the container of one service (once the
// services it depends on are ready, in a user's compose file), adds it to
// the stack and waits until it is ready.
func (ss *stackStart) startMember(ctx context.Context, svc types.ServiceConfig) error {
	d, st, o := ss.d, ss.st, ss.o
	spec, meta, err := stackServiceSpec(ss.proj, svc, st, o)
	if err != nil {
		return err
	}
	if o.Target.Meta.Compose != nil {
		if err := waitDependencies(ctx, d, svc, ss.started, o.ReadyTimeout); err != nil {
			return err
		}
	}
	extra := maps.Clone(ss.extra)
	if meta.Role == "app" {
		extra = mergeLabels(extra, map[string]string{engine.LabelApp: o.Target.Name})
	}
	m, err := st.StartOn(ctx, d, svc.Name, meta.Role, meta.Shaped, spec, extra)
	if m != nil {
		ss.started[svc.Name] = m
	}
	if err != nil {
		return err
	}
	switch meta.Role {
	case "db":
		return ss.dbReady(ctx, m)
	case "app":
		st.AppAddr = net.JoinHostPort(m.IP, fmt.Sprint(o.Target.Meta.Port))
		if addr, ok := m.Published[fmt.Sprintf("%d/tcp", o.Target.Meta.Port)]; o.Publish && ok {
			st.AppURL = "http://" + addr
		}
		return WaitApp(ctx, d, st, m, o.ReadyTimeout)
	}
	return nil
}

// dbReady waits until the database answers, notes whether it can count
// statements (a user's compose database) and applies the app's
// database initialisation.
func (ss *stackStart) dbReady(ctx context.Context, m *Member) error {
	d, st, o := ss.d, ss.st, ss.o
	if err := WaitDB(ctx, d, m, o.ReadyTimeout); err != nil {
		return err
	}
	if o.Target.Meta.Compose != nil {
		st.NoStatements = statementsUnavailable(ctx, d, st)
	}
	if len(o.Target.Meta.DBInit) > 0 {
		files, err := ExpandDBInit(o.Target.Meta.DBInit)
		if err != nil {
			return err
		}
		if err := ApplyDBInit(ctx, d, st, files); err != nil {
			return err
		}
	}
	return nil
}

// stackProject is the compose project a stack runs: rttlab's feed stack
// with the target's image and a fresh password, or the user's compose file
// (whose database credentials then become st.DB).
func stackProject(ctx context.Context, st *Stack, t apps.Target) (*types.Project, error) {
	ref := t.Meta.Compose
	if ref == nil {
		return LoadStackFile(ctx, "feed.yaml", map[string]string{
			"RTTLAB_DB_PASSWORD": st.DB.Password,
			"RTTLAB_APP_IMAGE":   TargetImage(t, st.Platform),
			"RTTLAB_DB_IMAGE":    st.Image("postgres"),
		})
	}
	proj, err := CheckComposeRef(ctx, *ref)
	if err != nil {
		return nil, err
	}
	db, err := proj.GetService(ref.DBService)
	if err != nil {
		return nil, err
	}
	if st.DB, err = ComposeDBCredentials(envMap(db.Environment)); err != nil {
		return nil, fmt.Errorf("compose file %s: database service %s: %w", ref.File, ref.DBService, err)
	}
	return proj, nil
}

// stackServiceSpec is the container of one service of the stack's project
// (name, labels and network are the caller's) and its role: rttlab's
// feed stack says it in x-rttlab; in a user's file the app and database
// services are the shaped pair and any other service runs beside them.
func stackServiceSpec(proj *types.Project, svc types.ServiceConfig, st *Stack, o StackOptions) (runtime.MemberSpec, ServiceMeta, error) {
	var spec runtime.MemberSpec
	var meta ServiceMeta
	var env []string
	var err error
	if ref := o.Target.Meta.Compose; ref != nil {
		switch svc.Name {
		case ref.AppService:
			meta = ServiceMeta{Role: "app", Shaped: true}
		case ref.DBService:
			meta = ServiceMeta{Role: "db", Shaped: true}
		default:
			meta = ServiceMeta{Role: "service"}
		}
		if spec, err = composeServiceSpec(svc, ServiceImage(proj, svc)); err != nil {
			return spec, meta, fmt.Errorf("compose file %s: %w", ref.File, err)
		}
		env = envList(svc.Environment)
		if meta.Role == "app" {
			// The user's file wires the app to its database; --env and
			// env: entries are added (and win).
			env = withEnv(env, o.Target.Env)
		}
	} else {
		if meta, err = serviceMeta(svc); err != nil {
			return spec, meta, err
		}
		spec.Image = svc.Image
		env = envList(svc.Environment)
		if meta.Role == "app" {
			env = appEnv(env, st.DB.Password, o.Target)
		}
	}
	sort.Strings(env)
	spec.Env = env
	if o.Publish && meta.Role == "app" {
		// The app's own port (a user's app need not use 8080).
		spec.Publish = []string{fmt.Sprintf("%d/tcp", o.Target.Meta.Port)}
	}
	return spec, meta, nil
}

// envMap and envList read a compose service's environment (variables
// without a value are left out, as compose leaves them unset).
func envMap(m types.MappingWithEquals) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

func envList(m types.MappingWithEquals) []string {
	var out []string
	for k, v := range envMap(m) {
		out = append(out, k+"="+v)
	}
	return out
}

// FeedServiceEnv is one service's environment from the feed stack file
// for st (its password), with the target's environment added to the app's,
// sorted: the placement and worker studies start their containers from it.
func FeedServiceEnv(ctx context.Context, st *Stack, service string) ([]string, error) {
	proj, err := stackProject(ctx, st, st.Target)
	if err != nil {
		return nil, err
	}
	svc, err := proj.GetService(service)
	if err != nil {
		return nil, err
	}
	env := envList(svc.Environment)
	if service == "app" {
		env = withEnv(env, st.Target.Env)
	}
	sort.Strings(env)
	return env, nil
}

// appEnv adds to the compose file's app environment (the libpq PG*
// variables) the same connection as DATABASE_URL, the port the app
// listens on, and the target's environment (which wins).
func appEnv(env []string, password string, t apps.Target) []string {
	add := map[string]string{
		"DATABASE_URL": "postgres://rttlab:" + password + "@db:5432/rttlab?sslmode=disable",
		"PORT":         fmt.Sprint(t.Meta.Port),
	}
	for k, v := range t.Env {
		add[k] = v
	}
	return withEnv(env, add)
}

// withEnv sets the variables of add in env (NAME=VALUE entries), replacing
// any of the same name.
func withEnv(env []string, add map[string]string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := add[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range add {
		out = append(out, k+"="+v)
	}
	return out
}

// serviceOrder returns services so that dependencies come first.
func serviceOrder(p *types.Project) ([]types.ServiceConfig, error) {
	var out []types.ServiceConfig
	done := map[string]bool{}
	var visit func(name string, depth int) error
	visit = func(name string, depth int) error {
		if done[name] {
			return nil
		}
		if depth > len(p.Services) {
			return fmt.Errorf("compose: dependency cycle at service %s", name)
		}
		svc, ok := p.Services[name]
		if !ok {
			return fmt.Errorf("compose: unknown service %s", name)
		}
		deps := make([]string, 0, len(svc.DependsOn))
		for d := range svc.DependsOn {
			deps = append(deps, d)
		}
		sort.Strings(deps)
		for _, d := range deps {
			if err := visit(d, depth+1); err != nil {
				return err
			}
		}
		done[name] = true
		out = append(out, svc)
		return nil
	}
	names := make([]string, 0, len(p.Services))
	for n := range p.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := visit(n, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// WaitDB polls pg_isready inside the database container; the image's
// readiness means the schema and seed are loaded.
func WaitDB(ctx context.Context, d runtime.Watcher, m *Member, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		code, err := d.Exec(ctx, m.ID, runtime.ExecSpec{Cmd: []string{"pg_isready", "-q", "-h", "127.0.0.1", "-d", "rttlab"}, User: "postgres", Timeout: 10 * time.Second})
		if err == nil && code == 0 {
			return nil
		}
		if err := CheckRunning(ctx, d, m); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("database %s not ready after %s", m.Name, timeout)
		}
		if err := conc.Sleep(ctx, 300*time.Millisecond); err != nil {
			return err
		}
	}
}

// WaitApp polls the app's readiness path: from the host when published,
// else from inside the database container's network (the app is on the
// private network only).
func WaitApp(ctx context.Context, d runtime.Watcher, st *Stack, m *Member, timeout time.Duration) error {
	health := st.Target.Meta.Health
	return pollHTTP(ctx, d, m, st.BaseURL()+health, timeout, func(last string) error {
		// A user's app that never becomes ready: what it last answered and
		// what it last logged say why (a wrong --port, --health, a crash
		// loop inside a running container).
		logs, _ := d.Logs(context.WithoutCancel(ctx), m.ID, 10)
		return fmt.Errorf("app %s (%s) did not answer %s on port %d with 200 within %s (last: %s); last log lines:\n%s",
			st.Target.Name, m.Name, health, st.Target.Meta.Port, timeout, last, indent(logs))
	})
}

// WaitHTTP polls url from the host until it answers 200.
func WaitHTTP(ctx context.Context, d runtime.Watcher, m *Member, url string, timeout time.Duration) error {
	return pollHTTP(ctx, d, m, url, timeout, func(last string) error {
		return fmt.Errorf("%s did not answer %s with 200 within %s (last: %s)", m.Name, url, timeout, last)
	})
}

// pollHTTP GETs url every 300 ms until it answers 200, failing at once
// when m stops and with late(what the last attempt got) after timeout.
func pollHTTP(ctx context.Context, d runtime.Watcher, m *Member, url string, timeout time.Duration, late func(last string) error) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: 2 * time.Second}
	last := "no attempt"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = lastErrText(err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := CheckRunning(ctx, d, m); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return late(last)
		}
		if err := conc.Sleep(ctx, 300*time.Millisecond); err != nil {
			return err
		}
	}
}

// lastErrText shortens a failed GET's error to its cause ("connection
// refused", "context deadline exceeded ...").
func lastErrText(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// ErrContainerExited reports a stack member that stopped.
var ErrContainerExited = errors.New("container exited")

// CheckRunning returns nil while m runs (or, a one-shot service, exited
// 0), else an error wrapping ErrContainerExited with its exit code and
// last log lines.
func CheckRunning(ctx context.Context, d runtime.Watcher, m *Member) error {
	s, err := d.State(ctx, m.ID)
	if err != nil {
		return err
	}
	if !s.Running && m.Role == "service" && s.ExitCode == 0 && exited(s) {
		return nil // a one-shot service of a user's compose file (a migration) that finished
	}
	if !s.Running {
		logs, _ := d.Logs(ctx, m.ID, 15)
		return fmt.Errorf("%s: %w (exit code %d); last log lines:\n%s", m.Name, ErrContainerExited, s.ExitCode, indent(logs))
	}
	return nil
}

// exited says whether a stopped member's process ended (rather than never
// started): Docker's "exited", which an OOM kill is too.
func exited(s runtime.State) bool { return s.Reason == "exited" || s.Reason == "OOMKilled" }

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// Remove removes every member and the network of the stack (and any
// other member carrying the run label, such as agents and clients).
// When something could not be removed it returns a *CleanupError that
// names it.
func (s *Stack) Remove(ctx context.Context, d runtime.Runtime) error {
	if _, err := CleanRun(ctx, d, s.RunID); err != nil {
		return &CleanupError{RunID: s.RunID, Err: err}
	}
	return nil
}

// RemoveJoin removes the stack as Remove does, even after ctx ended, and
// joins to *errp what could not be removed. With everything removed,
// *errp stays as it is: a Join of one error would hide its type from
// callers that switch on it (the budget gate's exit status).
func (s *Stack) RemoveJoin(ctx context.Context, d runtime.Runtime, errp *error) {
	if rerr := s.Remove(context.WithoutCancel(ctx), d); rerr != nil {
		*errp = errors.Join(*errp, rerr)
	}
}
