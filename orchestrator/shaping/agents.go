package shaping

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rttlab/rttlab/internal/conc"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/workloads"
)

// ErrAgentStopped is returned when a stack's shaping agent has stopped.
var ErrAgentStopped = errors.New("shaping agent is not running")

// Agent is a shaping sidecar sharing a stack member's network namespace:
// probes run in it. Its shaper runs in it too, except for the userspace
// wire hook, whose shaper runs in a container of its own on the host's
// network (CtlID), holding the member's packets on the stack's bridge.
type Agent struct {
	Target  *stack.Member
	ID      string
	Name    string
	CtlID   string      // the container serving the shaper; "" = the sidecar
	CtlName string      // its name
	Info    netem.Reply // backend and why, from the first show
}

// ctl is the container that serves the agent's shaper.
func (a *Agent) ctl() *stack.Member {
	if a.CtlID != "" {
		return &stack.Member{ID: a.CtlID, Name: a.CtlName}
	}
	return &stack.Member{ID: a.ID, Name: a.Name}
}

// Containers lists the agent's containers: the sidecar, and the wire
// shaper's when there is one.
func (a *Agent) Containers() []*stack.Member {
	out := []*stack.Member{{ID: a.ID, Name: a.Name}}
	if a.CtlID != "" {
		out = append(out, a.ctl())
	}
	return out
}

// Shaping is the set of agents of one stack.
type Shaping struct {
	Stack  *stack.Stack
	Agents map[string]*Agent // by role: app, db
	Scope  string
	// Backend and Why say which shaper runs (the app agent's).
	Backend string
	Why     string
	// Offsets, by RTT in µs, are added to the app's and the database's
	// one-way delay by SetRTT (from Calibrate); a setting without one is
	// applied as configured.
	Offsets map[int64][2]time.Duration
	// Floor is added to every shaped packet's one-way delay, the 0 ms
	// setting's included (netem.Config.Floor), so a change against 0 ms
	// is the delay alone while the userspace shaper's own pass (the
	// wait to be read) stays under it.
	Floor time.Duration
}

// StartShaped starts the stack of o on the runtime rt and an agent per
// shaped member (StartAgents). The caller removes the stack when done;
// when the agents fail, the stack is removed before StartShaped returns,
// and what could not be removed is joined to the error.
func StartShaped(ctx context.Context, rt runtime.Runtime, o stack.StackOptions, backend, scope, hook string) (*stack.Stack, *Shaping, error) {
	st, err := stack.StartStack(ctx, rt, o)
	if err != nil {
		return nil, nil, err
	}
	sh, err := StartAgents(ctx, rt, st, backend, scope, hook)
	if err != nil {
		st.RemoveJoin(ctx, rt, &err)
		return nil, nil, err
	}
	return st, sh, nil
}

// StartAgents starts on the runtime rt one agent per shaped member of the
// stack, beside it in its network namespace with CAP_NET_ADMIN and
// CAP_NET_RAW, and waits until each answers.
// hook is the userspace shaper's: wire ("", the default: on the stack's
// bridge in the host's namespace, which needs a runtime with a host
// network, runtime.WireHost), ingress or egress.
func StartAgents(ctx context.Context, rt runtime.Runtime, st *stack.Stack, backend, scope, hook string) (*Shaping, error) {
	if err := ValidHook(hook); err != nil {
		return nil, err
	}
	if hook == "" {
		hook = netem.HookWire
	}
	switch scope {
	case "path", "interface":
	default:
		return nil, fmt.Errorf("scope %q: use path or interface", scope)
	}
	sh := &Shaping{Stack: st, Agents: map[string]*Agent{}, Scope: scope}
	wire := false
	if hook == netem.HookWire {
		b, err := resolveBackend(ctx, rt, backend, st.Hosts())
		if err != nil {
			return nil, err
		}
		backend, wire = b, b == netem.BackendUserspace
	}
	for _, m := range st.Members {
		if !m.Shaped {
			continue
		}
		a, err := startAgent(ctx, rt, st, m, backend, hook, wire)
		if a != nil {
			sh.Agents[m.Role] = a
		}
		if err != nil {
			return sh, err
		}
	}
	for role, a := range sh.Agents {
		if err := sh.waitAgent(ctx, rt, role, a); err != nil {
			return sh, err
		}
	}
	// Backend and Why: the app's agent's, else any agent's (a stack of
	// the database alone).
	for _, role := range append([]string{"app"}, slices.Sorted(maps.Keys(sh.Agents))...) {
		if a := sh.Agents[role]; a != nil {
			sh.Backend, sh.Why = a.Info.Backend, a.Info.Why
			break
		}
	}
	return sh, nil
}

// waitAgent waits, up to 30 s, until the agent's shaper answers, and
// keeps its first reply (backend and why) in a.Info.
func (sh *Shaping) waitAgent(ctx context.Context, d runtime.Watcher, role string, a *Agent) error {
	var rep netem.Reply
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep, err = sh.Control(ctx, d, a, "show")
		if err == nil {
			break
		}
		if err := stack.CheckRunning(ctx, d, a.ctl()); err != nil {
			return fmt.Errorf("agent for %s: %w", role, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agent %s did not answer: %w", a.Name, err)
		}
		if err := conc.Sleep(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("agent %s: %w", a.Name, err)
		}
	}
	a.Info = rep
	return nil
}

// agentCmd serves the shaper in a member's namespace. The wire hook is
// served by a shaper container of its own (wireShaperSpec), so a sidecar
// started with it shapes with the kernel and is given no hook.
func agentCmd(backend, hook string) []string {
	cmd := []string{"agent", "serve", "--shaper", backend}
	if hook != "" && hook != netem.HookWire {
		cmd = append(cmd, "--hook", hook)
	}
	return cmd
}

// FloorArgs are the agent ctl flags of a floor (none for 0).
func FloorArgs(floor time.Duration) []string {
	if floor <= 0 {
		return nil
	}
	return []string{"--floor", fmt.Sprintf("%dns", floor.Nanoseconds())}
}

// Control runs `rttlab agent ctl` in an agent and decodes the JSON reply.
func (sh *Shaping) Control(ctx context.Context, d runtime.Execer, a *Agent, op string, args ...string) (netem.Reply, error) {
	return agentclient.Client{D: d, ID: a.ctl().ID, Name: a.Name}.Ctl(ctx, agentclient.CtlOptions{Op: op, Args: args})
}

// DefaultFloorMs is the floor of the userspace shaper when a plan or a
// command gives none: above its own pass (the wait to be read, ~0.1-0.2 ms
// p50 on a busy 2-vCPU host), so every packet leaves at its bridge stamp +
// floor + delay and a change against 0 ms is the delay alone.
const DefaultFloorMs = 0.3

// MaxFloorMs bounds a floor: it is for the shaper's pass, not a delay.
const MaxFloorMs = 10.0

// DefaultFloor is the floor a backend gets by default: DefaultFloorMs for
// the userspace shaper, none for kernel netem.
func DefaultFloor(backend string) time.Duration {
	if backend == netem.BackendUserspace {
		return netem.FromMs(DefaultFloorMs)
	}
	return 0
}

// SetRTT applies a split delay for the target RTT: half on each side (the
// app->db half on one agent, the db->app half on the other; which agent
// holds which depends on the shaper's hook), plus the calibration offset
// of that setting when there is one. In path scope only packets between
// the two are delayed. 0 still routes packets through the shaper.
func (sh *Shaping) SetRTT(ctx context.Context, d runtime.Execer, rtt time.Duration) error {
	if err := netem.ValidateDelay(rtt); err != nil {
		return err
	}
	appD, dbD := netem.SplitRTT(rtt)
	if off, ok := sh.Offsets[rtt.Microseconds()]; ok && rtt > 0 {
		appD, dbD = max(appD+off[0], 0), max(dbD+off[1], 0)
	}
	app, db := sh.Stack.Role("app"), sh.Stack.Role("db")
	sides := []struct {
		role  string
		delay time.Duration
		peer  *stack.Member
	}{{"app", appD, db}, {"db", dbD, app}}
	for _, s := range sides {
		if sh.Agents[s.role] == nil {
			return fmt.Errorf("no agent for %s", s.role)
		}
	}
	// The two sides are set at once: each is its own agent.
	return conc.Each(len(sides), func(i int) error {
		s := sides[i]
		args := append([]string{"--delay", fmt.Sprintf("%dns", s.delay.Nanoseconds())}, FloorArgs(sh.Floor)...)
		if sh.Scope == "path" {
			args = append(args, "--peer", s.peer.IP)
		}
		if _, err := sh.Control(ctx, d, sh.Agents[s.role], "set", args...); err != nil {
			return fmt.Errorf("set %s delay %s: %w", s.role, s.delay, err)
		}
		return nil
	})
}

// DefaultFloor sets the floor the running shapers' backend gets by
// default (DefaultFloor), asking the agents which backend they run.
func (sh *Shaping) DefaultFloor(ctx context.Context, d runtime.Execer) error {
	reps, err := sh.Show(ctx, d)
	if err != nil {
		return err
	}
	sh.Floor = 0
	for _, r := range reps {
		sh.Floor = max(sh.Floor, DefaultFloor(r.Backend))
	}
	return nil
}

// Show returns each agent's current setting.
func (sh *Shaping) Show(ctx context.Context, d runtime.Execer) (map[string]netem.Reply, error) {
	out := map[string]netem.Reply{}
	for role, a := range sh.Agents {
		rep, err := sh.Control(ctx, d, a, "show")
		if err != nil {
			return out, err
		}
		out[role] = rep
	}
	return out, nil
}

// Clear removes the delay on both sides.
func (sh *Shaping) Clear(ctx context.Context, d runtime.Execer) error {
	roles := slices.Sorted(maps.Keys(sh.Agents))
	return conc.Each(len(roles), func(i int) error {
		if _, err := sh.Control(ctx, d, sh.Agents[roles[i]], "clear"); err != nil {
			return fmt.Errorf("clear %s: %w", roles[i], err)
		}
		return nil
	})
}

// Ping sends ICMP echoes from the app's network namespace (inside its
// agent) to the database.
func (sh *Shaping) Ping(ctx context.Context, d runtime.Execer, count int, interval time.Duration) (workloads.PingResult, error) {
	return AgentPing(ctx, d, sh.Agents["app"], sh.Stack.Role("db").IP, count, interval)
}

// AgentPing runs `rttlab agent ping` in agent a towards the address to,
// timed on the wire (the reply's kernel stamp) unless a's shaper holds
// replies after that stamp.
func AgentPing(ctx context.Context, d runtime.Execer, a *Agent, to string, count int, interval time.Duration) (workloads.PingResult, error) {
	// A userspace ingress hook holds a reply after the kernel stamped it:
	// only the pinger's read sees that hold.
	timing := "wire"
	if a.Info.Direction == netem.HookIngress {
		timing = "process"
	}
	return agentclient.Client{D: d, ID: a.ID, Name: a.Name}.Ping(ctx, agentclient.PingOptions{To: to, Count: count, Interval: interval, Timing: timing})
}

// SelectOne runs the SELECT 1 probe from the app's network namespace.
func (sh *Shaping) SelectOne(ctx context.Context, d runtime.Execer, runs, calls int) ([]workloads.ProbeRun, error) {
	return AgentSelectOne(ctx, d, sh.Agents["app"], sh.Stack.Role("db").IP, sh.Stack.DB, runs, calls)
}

// AgentSelectOne runs `rttlab agent sqlprobe` in agent a against the
// database at dbIP.
func AgentSelectOne(ctx context.Context, d runtime.Execer, a *Agent, dbIP string, db stack.DBCredentials, runs, calls int) ([]workloads.ProbeRun, error) {
	return agentclient.Client{D: d, ID: a.ID, Name: a.Name}.SQLProbe(ctx, agentclient.SQLProbeOptions{
		Host: dbIP, User: db.User, Database: db.Database, Password: db.Password, Runs: runs, Calls: calls})
}

// Finder is what FindShaping asks of a runtime: its members by their
// labels, and what the database was started with.
type Finder interface {
	runtime.Lister
	runtime.Inspector
}

// FindShaping rebuilds the Shaping of a stack started by `rttlab up` from
// its labels (for `rttlab shape ...`).
func FindShaping(ctx context.Context, d Finder, runID string) (*Shaping, error) {
	cs, err := d.ListMembers(ctx, map[string]string{engine.LabelRun: runID})
	if err != nil {
		return nil, err
	}
	st := &stack.Stack{RunID: runID}
	sh := &Shaping{Stack: st, Agents: map[string]*Agent{}, Scope: "path"}
	byID := map[string]*stack.Member{}
	for _, c := range cs {
		role := c.Labels[engine.LabelRole]
		if role == "db" || role == "app" {
			m, err := labelledMember(ctx, d, st, c)
			if err != nil {
				return nil, err
			}
			st.Members = append(st.Members, m)
			byID[c.ID] = m
		}
	}
	shapers := map[string]runtime.Listed{} // wire shapers by target
	for _, c := range cs {
		role := c.Labels[engine.LabelRole]
		if role != "agent" && role != stack.RoleShaper {
			continue
		}
		m := byID[c.Labels[engine.LabelTarget]]
		if m == nil {
			continue
		}
		if !c.Running {
			return nil, fmt.Errorf("%w: %s (%s)", ErrAgentStopped, c.Name, c.Status)
		}
		if role == stack.RoleShaper {
			shapers[m.ID] = c
			continue
		}
		sh.Agents[m.Role] = &Agent{Target: m, ID: c.ID, Name: c.Name}
	}
	for _, a := range sh.Agents {
		if c, ok := shapers[a.Target.ID]; ok {
			a.CtlID, a.CtlName = c.ID, c.Name
		}
	}
	if st.Role("app") == nil || st.Role("db") == nil {
		return nil, fmt.Errorf("run %s is not a stack rttlab started (no app and database containers with its labels)", runID)
	}
	if len(sh.Agents) != 2 {
		return nil, fmt.Errorf("run %s has no shaping agents", runID)
	}
	return sh, nil
}

// labelledMember is the stack member of the app or database member c,
// with its address; the database's credentials (from its environment)
// become st.DB.
func labelledMember(ctx context.Context, d runtime.Inspector, st *stack.Stack, c runtime.Listed) (*stack.Member, error) {
	role := c.Labels[engine.LabelRole]
	m := &stack.Member{Service: c.Labels[engine.LabelService], Role: role, Shaped: true, ID: c.ID, Name: c.Name, NetNS: c.NetNS}
	info, err := d.InspectMember(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	m.IP = info.Addr
	if role == "db" {
		if st.DB, err = stack.ComposeDBCredentials(stack.EnvMap(info.Env)); err != nil {
			return nil, fmt.Errorf("database %s: %w", m.Name, err)
		}
	}
	return m, nil
}

// CheckAgents returns an error naming the first agent that is no longer
// running (wrapping stack.ErrContainerExited), or nil.
func (sh *Shaping) CheckAgents(ctx context.Context, d runtime.Watcher) error {
	for _, role := range []string{"app", "db"} {
		a := sh.Agents[role]
		if a == nil {
			continue
		}
		for _, c := range a.Containers() {
			if err := stack.CheckRunning(ctx, d, c); err != nil {
				if errors.Is(err, stack.ErrContainerExited) {
					return fmt.Errorf("shaping agent for %s died: %w", role, err)
				}
				return err
			}
		}
	}
	return nil
}

// ShaperSnapshot is each agent's statistics at one moment.
type ShaperSnapshot struct {
	At      time.Time
	Replies map[string]netem.Reply // by role
}

// Snapshot reads every agent's statistics (ctl show), all at once.
func (sh *Shaping) Snapshot(ctx context.Context, d runtime.Execer) (ShaperSnapshot, error) {
	s := ShaperSnapshot{At: time.Now(), Replies: map[string]netem.Reply{}}
	roles := slices.Sorted(maps.Keys(sh.Agents))
	reps := make([]netem.Reply, len(roles))
	err := conc.Each(len(roles), func(i int) error {
		var err error
		reps[i], err = sh.Control(ctx, d, sh.Agents[roles[i]], "show")
		return err
	})
	for i, role := range roles {
		if err == nil {
			s.Replies[role] = reps[i]
		}
	}
	return s, err
}

// ShaperDelta is what one side's shaper did between two snapshots.
type ShaperDelta struct {
	Role      string
	Direction string
	Summary   netem.Summary
}

// ShaperDeltas returns, per side with statistics in both snapshots, what
// the shaper did in between (sides in name order: app, db; or the
// placement's nodes). A shaper without statistics (the kernel backend)
// gives no delta.
func ShaperDeltas(before, after ShaperSnapshot) ([]ShaperDelta, error) {
	wall := after.At.Sub(before.At)
	var out []ShaperDelta
	for _, role := range slices.Sorted(maps.Keys(after.Replies)) {
		b, okb := before.Replies[role]
		a, oka := after.Replies[role]
		if !okb || !oka || b.Stats == nil || a.Stats == nil {
			continue
		}
		diff, err := a.Stats.Sub(*b.Stats)
		if err != nil {
			return nil, fmt.Errorf("%s shaper statistics: %w", role, err)
		}
		out = append(out, ShaperDelta{Role: role, Direction: a.Direction, Summary: diff.Summarize(wall)})
	}
	return out, nil
}

// DropError is returned for a task during which a shaper lost packets.
func DropError(deltas []ShaperDelta) error {
	var parts []string
	for _, d := range deltas {
		if d.Summary.Drops > 0 {
			parts = append(parts, fmt.Sprintf("%s side dropped %d of %d packets", d.Role, d.Summary.Drops, d.Summary.Packets+d.Summary.Drops))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("the shaper lost packets during the task (%s): the data is not kept", strings.Join(parts, ", "))
}
