package placement

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/conc"
	"github.com/rttlab/rttlab/internal/proxyserve"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/workloads"
)

// Session is the placement study's four nodes with their agents.
type Session struct {
	Stack   *stack.Stack
	Shaping *shaping.Shaping
	Nodes   map[string]*stack.Member // client, a, b, db
	Port    int
	Proxy   string // the proxy container's ID while it runs
	Plan    *Plan
	// Progress gets a line per step; nil says nothing.
	Progress func(string)
}

func (ps *Session) say(format string, a ...any) {
	if ps.Progress != nil {
		ps.Progress(fmt.Sprintf(format, a...))
	}
}

// proxyPort is where the proxy listens in the client node.
const proxyPort = 18080

// proxyLog is the decision log's path inside the proxy container.
const proxyLog = "/tmp/rttlab-decisions.jsonl"

// StartPlacement starts on the runtime rt the database, the app on two
// compute hosts, the client node and one agent per node on one private
// network. On failure everything started is removed.
func StartPlacement(ctx context.Context, rt runtime.Runtime, plan *Plan, t apps.Target, p engine.Platform, readyTimeout time.Duration) (ps *Session, err error) {
	if readyTimeout == 0 {
		readyTimeout = p.Limit(stack.ReadyLimit)
	}
	runID := stack.NewRunID()
	st := &stack.Stack{RunID: runID, Target: t, DB: stack.RttlabDB(stack.NewPassword()), Platform: p}
	ps = &Session{Stack: st, Nodes: map[string]*stack.Member{}, Port: t.Meta.Port, Plan: plan}
	defer func() {
		if err != nil {
			st.RemoveJoin(ctx, rt, &err)
		}
	}()
	dbEnv, err := stack.FeedServiceEnv(ctx, st, "db")
	if err != nil {
		return ps, err
	}
	appVars, err := stack.FeedServiceEnv(ctx, st, "app")
	if err != nil {
		return ps, err
	}
	if n, ok := rt.(runtime.Network); ok {
		st.Network = "rttlab-" + runID
		if st.NetworkID, err = n.CreateNetwork(ctx, st.Network, stack.NetworkLabels(runID, map[string]string{engine.LabelStack: "placement"})); err != nil {
			return ps, err
		}
	}
	if err := ps.startNodes(ctx, rt, dbEnv, appVars, readyTimeout); err != nil {
		return ps, err
	}
	st.AppAddr = net.JoinHostPort(ps.Nodes[NodeA].IP, fmt.Sprint(t.Meta.Port))
	ps.Shaping, err = shaping.StartAgents(ctx, rt, st, plan.Shaper, "path", plan.Hook)
	if err != nil {
		return ps, err
	}
	return ps, nil
}

// startNodes starts the database, the app on a and b and the client
// node, each waited for (the database and the apps until they answer).
func (ps *Session) startNodes(ctx context.Context, rt runtime.Runtime, dbEnv, appVars []string, readyTimeout time.Duration) error {
	st := ps.Stack
	ps.say("starting PostgreSQL, %s on compute hosts a and b, the client node and four agents", st.Target.Name)
	db, err := ps.startNode(ctx, rt, NodeDB, st.Image("postgres"), nil, dbEnv)
	if err != nil {
		return err
	}
	if err := stack.WaitDB(ctx, rt, db, readyTimeout); err != nil {
		return err
	}
	for _, n := range []string{NodeA, NodeB} {
		m, err := ps.startNode(ctx, rt, n, st.Image(st.Target.Meta.Name), nil, appVars)
		if err != nil {
			return err
		}
		if err := stack.WaitHTTP(ctx, rt, m, "http://"+net.JoinHostPort(m.IP, fmt.Sprint(st.Target.Meta.Port))+st.Target.Meta.Health, readyTimeout); err != nil {
			return err
		}
	}
	if _, err := ps.startNode(ctx, rt, NodeClient, stack.AgentImage, []string{"agent", "idle"}, nil); err != nil {
		return err
	}
	return nil
}

// startNode starts one node on the runtime rt (on the stack's network,
// on the cluster node the plan pins it to), adds it to the stack (once it
// has an ID) and to the nodes, with its address.
func (ps *Session) startNode(ctx context.Context, rt runtime.Members, node, image string, cmd, env []string) (*stack.Member, error) {
	var extra map[string]string
	if node == NodeA || node == NodeB {
		extra = map[string]string{engine.LabelApp: ps.Stack.Target.Name}
	}
	m, err := ps.Stack.StartOn(ctx, rt, node, node, true, runtime.MemberSpec{Image: image, Cmd: cmd, Env: env, NanoCPUs: ps.Plan.nanoCPUs(node), Node: ps.Plan.nodeOf(node)}, extra)
	if m != nil {
		ps.Nodes[node] = m
	}
	return m, err
}

// clusterNodes is, per study node, the cluster node the runtime runs it
// on; nil on one host (Docker), where no member has one.
func (ps *Session) clusterNodes() map[string]string {
	var out map[string]string
	for n, m := range ps.Nodes {
		if m == nil || m.Node == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[n] = m.Node
	}
	return out
}

// SetLinks applies every directed pair's one-way delay (zero when zero
// is true): each agent holds the packets of its own direction per peer,
// which direction depending on its shaper (ingress: arriving from the
// peer; egress: sent to it). Zero still routes packets through the
// shaper, so every phase pays the same shaper cost.
func (ps *Session) SetLinks(ctx context.Context, d runtime.Execer, oneWay map[[2]string]float64) error {
	for _, self := range PlaceNodes {
		a := ps.Shaping.Agents[self]
		if a == nil {
			return fmt.Errorf("no agent for node %s", self)
		}
		ns := func(ms float64) int64 { return time.Duration(ms * float64(time.Millisecond)).Nanoseconds() }
		var args []string
		for _, peer := range PlaceNodes {
			if peer == self {
				continue
			}
			ms := oneWay[[2]string{self, peer}] // egress: self→peer
			if a.Info.Direction == netem.HookIngress {
				ms = oneWay[[2]string{peer, self}]
			}
			args = append(args, "--peer-delay", fmt.Sprintf("%s=%dns", ps.Nodes[peer].IP, ns(ms)))
		}
		args = append(args, shaping.FloorArgs(time.Duration(ns(ps.Plan.FloorMs)))...)
		if _, err := ps.Shaping.Control(ctx, d, a, "set", args...); err != nil {
			return fmt.Errorf("set delays on %s: %w", self, err)
		}
	}
	return nil
}

// hostURL is a compute host's base URL as the client node reaches it.
func (ps *Session) hostURL(node string) string {
	return "http://" + net.JoinHostPort(ps.Nodes[node].IP, fmt.Sprint(ps.Port))
}

// Load runs the closed-loop load client in the client node against base
// with the given paths (warmup first), over one kept-alive connection or,
// with newConn, a new connection per request.
func (ps *Session) Load(ctx context.Context, d runtime.Watcher, base string, paths []string, warmup int, newConn bool) ([]workloads.Result, error) {
	return ps.client(d).Load(ctx, agentclient.LoadOptions{URL: base, Paths: paths, Warmup: warmup, NewConn: newConn})
}

// client is the agent client of the client node, which fails a call
// during which a node or agent died.
func (ps *Session) client(d runtime.Watcher) agentclient.Client {
	return agentclient.Client{D: d, ID: ps.Nodes[NodeClient].ID, Alive: func(ctx context.Context) error { return ps.dead(ctx, d) }}
}

// dead reports a node or agent that stopped.
func (ps *Session) dead(ctx context.Context, d runtime.Watcher) error {
	for _, m := range ps.Stack.Members {
		if err := stack.CheckRunning(ctx, d, m); err != nil {
			return err
		}
	}
	if ps.Shaping != nil {
		for _, a := range ps.Shaping.Agents {
			for _, c := range a.Containers() {
				if err := stack.CheckRunning(ctx, d, c); err != nil {
					return fmt.Errorf("shaping agent died: %w", err)
				}
			}
		}
	}
	return nil
}

// Connect times TCP connects from the client node to a host.
func (ps *Session) Connect(ctx context.Context, d runtime.Watcher, node string, warmup, count int) ([]float64, error) {
	ns, err := ps.client(d).Connect(ctx, net.JoinHostPort(ps.Nodes[node].IP, fmt.Sprint(ps.Port)), warmup, count)
	if err != nil {
		return nil, fmt.Errorf("connect probe to %s: %w", node, err)
	}
	return nsToMs(ns), nil
}

// Select1Wire runs Select1 while the node's agent and the database's
// capture the packets between the two, and returns the latencies and
// the wire's round trips of the database's turns (each capture on its
// own clock, so the check holds across cluster nodes): what the link
// between the node and the database adds, seen on the wire.
func (ps *Session) Select1Wire(ctx context.Context, d runtime.Execer, node string, warmup, calls int) ([]float64, workloads.RoundTrips, error) {
	var trips workloads.RoundTrips
	if !wireSeen(ps.Plan.Hook, ps.Shaping.Backend) {
		ms, err := ps.Select1(ctx, d, node, warmup, calls)
		return ms, trips, err
	}
	c, err := ps.Shaping.StartPairCapture(ctx, d, node, NodeDB, shaping.DefaultCaptureIface, shaping.DefaultCaptureMaxPackets)
	if err != nil {
		return nil, trips, fmt.Errorf("wire check of %s→%s: %w", node, NodeDB, err)
	}
	defer c.Abort()
	ms, err := ps.Select1(ctx, d, node, warmup, calls)
	if err != nil {
		return nil, trips, err
	}
	hostCap, dbCap, err := c.Finish()
	if err != nil {
		return nil, trips, fmt.Errorf("wire check of %s→%s: %w", node, NodeDB, err)
	}
	return ms, workloads.MatchRoundTrips(hostCap, dbCap), nil
}

// Select1 runs warmup+calls SELECT 1 from a node's namespace and returns
// the measured calls' latencies in ms.
func (ps *Session) Select1(ctx context.Context, d runtime.Execer, node string, warmup, calls int) ([]float64, error) {
	runs, err := shaping.AgentSelectOne(ctx, d, ps.Shaping.Agents[node], ps.Nodes[NodeDB].IP, ps.Stack.DB, 1, warmup+calls)
	if err != nil {
		return nil, err
	}
	if len(runs) != 1 {
		return nil, fmt.Errorf("SELECT 1 probe from %s: %d runs, want 1", node, len(runs))
	}
	s := runs[0].Samples
	if len(s) > warmup {
		s = s[warmup:]
	}
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v) / 1e6
	}
	return out, nil
}

// Ping sends ICMP echoes from one node to another and returns the mean
// RTT in ms and the echoes lost.
func (ps *Session) Ping(ctx context.Context, d runtime.Execer, from, to string, count int) (float64, int, error) {
	res, err := shaping.AgentPing(ctx, d, ps.Shaping.Agents[from], ps.Nodes[to].IP, count, 2*time.Millisecond)
	if err != nil {
		return 0, 0, err
	}
	if res.Received == 0 {
		return 0, res.Lost, fmt.Errorf("ping %s→%s: no echo came back", from, to)
	}
	return float64(res.Mean) / 1e6, res.Lost, nil
}

// StartProxy starts the routing proxy in the client node's network
// namespace with cfg (Listen and LogPath are set here), on the runtime d,
// and waits until it answers.
func (ps *Session) StartProxy(ctx context.Context, d runtime.Runtime, cfg Config) error {
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", proxyPort)
	cfg.LogPath = proxyLog
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	client := ps.Nodes[NodeClient]
	if client == nil || client.NetNS == "" {
		return errors.New("routing proxy: the client node has no network namespace to join")
	}
	name := fmt.Sprintf("rttlab-%s-proxy", ps.Stack.RunID)
	pm, err := d.StartMember(ctx, runtime.MemberSpec{Name: name, Role: "proxy", Image: stack.AgentImage,
		Cmd: []string{"agent", "proxy", "--config-json", string(b)}, Labels: stack.RunLabels(ps.Stack.RunID, nil),
		Beside: client.NetNS, DropAllCaps: true, Platform: ps.Stack.Platform.Native().String()})
	id := pm.ID
	ps.Proxy = id
	if err != nil {
		return err
	}
	// Ready when a TCP connect succeeds from the client node.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ns, err := (agentclient.Client{D: d, ID: ps.Nodes[NodeClient].ID}).Connect(ctx, cfg.Listen, 0, 1); err == nil && len(ns) == 1 {
			return nil
		}
		if err := stack.CheckRunning(ctx, d, &stack.Member{ID: id, Name: name}); err != nil {
			return fmt.Errorf("routing proxy: %w", err)
		}
		if time.Now().After(deadline) {
			return errors.New("routing proxy did not listen within 30 s")
		}
		if err := conc.Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// StopProxy stops the proxy after reading its decision log.
func (ps *Session) StopProxy(ctx context.Context, d runtime.Runtime) ([]DecisionRecord, error) {
	if ps.Proxy == "" {
		return nil, nil
	}
	// The log is flushed whenever the proxy has no decision queued.
	var recs []DecisionRecord
	var rerr error
	for i := 0; i < 5; i++ {
		var out, errb bytes.Buffer
		code, err := d.Exec(ctx, ps.Proxy, runtime.ExecSpec{Cmd: []string{"cat", proxyLog}, Stdout: &out, Stderr: &errb, Timeout: 30 * time.Second})
		if err == nil && code == 0 {
			recs, rerr = proxyserve.ReadLog[DecisionRecord](&out)
			if rerr == nil {
				break
			}
		} else if err != nil {
			rerr = err
		} else {
			rerr = fmt.Errorf("read the decision log: %s", strings.TrimSpace(errb.String()))
		}
		conc.Sleep(ctx, 200*time.Millisecond)
	}
	rmErr := d.RemoveMember(ctx, ps.Proxy)
	ps.Proxy = ""
	return recs, errors.Join(rerr, rmErr)
}

func nsToMs(ns []int64) []float64 {
	out := make([]float64, len(ns))
	for i, v := range ns {
		out[i] = float64(v) / 1e6
	}
	return out
}

// shuffled returns n copies of each item in a seeded random order.
func shuffled[T any](items []T, n int, rng *rand.Rand) []T {
	out := make([]T, 0, len(items)*n)
	for _, it := range items {
		for i := 0; i < n; i++ {
			out = append(out, it)
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
