// Package agent is the program that runs inside the containers rttlab
// starts, or beside them: the shaper's control server ('serve', 'ctl'), the
// load drivers ('load', 'openloop', 'capacity', 'connect'), the probes
// ('ping', 'sqlprobe', 'capture', 'sweep', 'netem-probe'), wire traces
// ('trace') and the two studies' proxies ('proxy', 'workers-proxy'). The
// rttlab binary mounts it as `rttlab agent`; every command prints JSON.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/internal/cli"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/workloads"
)

// AgentSocket is where `agent serve` listens inside the agent container.
const AgentSocket = "/run/rttlab/agent.sock"

// NewCmd returns the `agent` command tree.
func NewCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Commands that run inside rttlab's agent and client containers",
		Long: `These commands run inside containers rttlab starts; you rarely call them by
hand. An agent shares a shaped container's network namespace and holds its
shaper ('serve'); the orchestrator controls it over docker exec ('ctl') and
runs probes from it ('ping', 'sqlprobe'). The client container runs the
load driver ('load'). Every command prints JSON.`,
		Hidden: false,
	}
	cmd.AddCommand(newAgentSweepCmd(), newAgentNetemProbeCmd())
	cmd.AddCommand(newAgentServeCmd(), newAgentCtlCmd(), newAgentPingCmd(), newAgentSQLProbeCmd(), newAgentLoadCmd(), newAgentIdleCmd(), newAgentTraceCmd(), newAgentProxyCmd(), newAgentConnectCmd(), newAgentOpenLoopCmd(), newAgentCapacityCmd(), newAgentWorkersProxyCmd())
	cmd.AddCommand(newAgentCaptureCmd(), newAgentSessionCmd())
	return cmd
}

type agentServeOptions struct {
	socket string
	opts   netem.Options
	queue  uint
	src    string
}

// Defaults of the userspace shaper that `agent serve` runs.
const (
	defaultHook = netem.HookIngress
	defaultHot  = 0
)

func newAgentServeCmd() *cobra.Command {
	o := &agentServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Hold the shaper for this network namespace until SIGTERM",
		Long: `Creates the shaper (--shaper auto tries kernel netem and falls back to the
userspace NFQUEUE shaper) and serves JSON requests on a unix socket. On
SIGTERM or Ctrl-C it removes every qdisc, filter and queue rule it added.
Needs CAP_NET_ADMIN.`,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare() },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.socket, "socket", AgentSocket, "unix socket to serve on")
	cmd.Flags().StringVar(&o.opts.Backend, "shaper", "auto", "auto, kernel or userspace")
	cmd.Flags().StringVar(&o.opts.Link, "link", "", "egress interface (default: the default route's)")
	cmd.Flags().UintVar(&o.queue, "queue", 0, "NFQUEUE number (0: the default)")
	cmd.Flags().StringVar(&o.opts.Hook, "hook", defaultHook, "userspace shaper: wire (hold the packets --src sends on --bridge, run on the host's network, before the receiver sees them), ingress (hold packets from the peers after the receiver's kernel stamped them) or egress (hold packets to the peers, timed from the read)")
	cmd.Flags().StringVar(&o.opts.Bridge, "bridge", "", "wire hook: the bridge the shaped container is attached to")
	cmd.Flags().StringVar(&o.src, "src", "", "wire hook: the shaped container's address")
	cmd.Flags().StringVar(&o.opts.Label, "label", "", "wire hook: a name for the shaper's rules, unique on the host")
	cmd.Flags().DurationVar(&o.opts.Hot, "hot", defaultHot, "userspace shaper: keep reading without sleeping this long after each packet (0: sleep)")
	return cmd
}

// prepare checks the shaper, queue, hook and --hot, and settles the
// shaper's options.
func (o *agentServeOptions) prepare() error {
	switch o.opts.Backend {
	case "auto", "kernel", "userspace":
	default:
		return cli.Usagef("--shaper %q: use auto, kernel or userspace", o.opts.Backend)
	}
	if o.queue > 65535 {
		return cli.Usagef("--queue %d: use 0..65535", o.queue)
	}
	switch o.opts.Hook {
	case netem.HookIngress, netem.HookEgress:
	case netem.HookWire:
		if o.opts.Bridge == "" || o.src == "" || o.opts.Label == "" {
			return cli.Usagef("--hook wire needs --bridge, --src and --label")
		}
		a, err := netip.ParseAddr(o.src)
		if err != nil {
			return cli.Usagef("--src %q: give the shaped container's IP address", o.src)
		}
		o.opts.Src = a
	default:
		return cli.Usagef("--hook %q: use wire, ingress or egress", o.opts.Hook)
	}
	if o.opts.Hot < 0 || o.opts.Hot > time.Second {
		return cli.Usagef("--hot %v: use 0 (sleep between packets) up to 1s", o.opts.Hot)
	}
	o.opts.QueueNum = uint16(o.queue)
	return nil
}

// run serves the shaper on the socket until the command's context ends.
func (o *agentServeOptions) run(cmd *cobra.Command) error {
	if err := os.MkdirAll(dirOf(o.socket), 0o700); err != nil {
		return err
	}
	err := netem.Serve(cmd.Context(), o.socket, o.opts)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "."
}

type agentCtlOptions struct {
	socket     string
	delay      string
	peers      []string
	peerDelays []string
	floor      string
}

func newAgentCtlCmd() *cobra.Command {
	o := &agentCtlOptions{}
	cmd := &cobra.Command{
		Use:   "ctl set|clear|show|ping",
		Short: "Control the agent's shaper; prints the JSON reply",
		Long: `set --delay D [--peer IP...]  one-way delay D (with a unit: 250us,
                              0.5ms; 0 routes packets through the shaper with
                              no delay), only between us and the peers when
                              given (which direction: the shaper's hook)
set --peer-delay IP=D ...     a delay of its own per peer
set ... --floor F             add F to every shaped packet's delay, zero
                              included (keeps the userspace shaper's own
                              pass from absorbing short delays)
clear                         remove the delay and everything the shaper added
show                          the current setting, backend and why
ping                          is the agent alive`,
		Args:    cobra.ExactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(args[0]) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	cmd.Flags().StringVar(&o.socket, "socket", AgentSocket, "the agent's unix socket")
	cmd.Flags().StringVar(&o.delay, "delay", "", "one-way delay with a unit (set)")
	cmd.Flags().StringSliceVar(&o.peers, "peer", nil, "peer address (repeatable): path scope")
	cmd.Flags().StringArrayVar(&o.peerDelays, "peer-delay", nil, "IP=DELAY (repeatable): a delay of its own per peer")
	cmd.Flags().StringVar(&o.floor, "floor", "", "added to every shaped packet's delay, zero included (set)")
	return cmd
}

// prepare checks the operation and that set has one kind of delay.
func (o *agentCtlOptions) prepare(op string) error {
	f := netem.CtlFlags{Delay: o.delay != "", Floor: o.floor != "", Peers: len(o.peers), PeerDelays: len(o.peerDelays)}
	if err := netem.CheckCtlFlags(op, f); err != nil {
		return cli.UsageError{Err: err}
	}
	return nil
}

// run sends the request to the agent and prints its reply as JSON.
func (o *agentCtlOptions) run(cmd *cobra.Command, op string) error {
	req, err := o.request(op)
	if err != nil {
		return err
	}
	rep, err := netem.Ctl(cmd.Context(), o.socket, req)
	b, _ := json.Marshal(rep)
	fmt.Fprintln(cmd.OutOrStdout(), string(b))
	return err
}

// request is the request of op with the delays the flags give.
func (o *agentCtlOptions) request(op string) (netem.Request, error) {
	req := netem.Request{Op: op, Peers: o.peers}
	if op == "set" && o.delay != "" {
		d, err := netem.ParseDelay(o.delay)
		if err != nil {
			return req, cli.UsageError{Err: fmt.Errorf("--delay: %w", err)}
		}
		req.DelayNs = d.Nanoseconds()
	}
	if op == "set" && o.floor != "" {
		f, err := netem.ParseDelay(o.floor)
		if err != nil {
			return req, cli.UsageError{Err: fmt.Errorf("--floor: %w", err)}
		}
		req.FloorNs = f.Nanoseconds()
	}
	for _, pd := range o.peerDelays {
		ip, ds, ok := strings.Cut(pd, "=")
		if !ok {
			return req, cli.Usagef("--peer-delay %q: use IP=DELAY, e.g. 172.18.0.3=125us", pd)
		}
		if _, err := netip.ParseAddr(ip); err != nil {
			return req, cli.Usagef("--peer-delay %q: %q is not an IP address", pd, ip)
		}
		d, err := netem.ParseDelay(ds)
		if err != nil {
			return req, cli.UsageError{Err: fmt.Errorf("--peer-delay %q: %w", pd, err)}
		}
		req.PeerDelays = append(req.PeerDelays, netem.PeerDelayJSON{Peer: ip, DelayNs: d.Nanoseconds()})
	}
	return req, nil
}

type agentPingOptions struct {
	to       string
	count    int
	interval time.Duration
	timing   string
}

func newAgentPingCmd() *cobra.Command {
	o := &agentPingOptions{}
	cmd := &cobra.Command{
		Use:   "ping --to IP",
		Short: "ICMP echo probe; prints mean/median/min/max and samples as JSON",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if o.count < 1 || o.count > 100000 {
				return cli.Usagef("--count %d: use 1..100000", o.count)
			}
			if o.interval < 0 {
				return cli.Usagef("--interval must not be negative")
			}
			if o.timing != "wire" && o.timing != "process" {
				return cli.Usagef("--timing %q: use wire (the reply's kernel stamp) or process (its read)", o.timing)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dst, err := netip.ParseAddr(o.to)
			if err != nil {
				return cli.Usagef("--to %q: not an IP address", o.to)
			}
			timing := workloads.PingOnWire
			if o.timing == "process" {
				timing = workloads.PingInProcess
			}
			res, err := workloads.PingTimed(cmd.Context(), dst, o.count, o.interval, timing)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	cmd.Flags().StringVar(&o.to, "to", "", "destination address")
	cmd.Flags().IntVar(&o.count, "count", 50, "echo requests")
	cmd.Flags().DurationVar(&o.interval, "interval", 10*time.Millisecond, "time between echo requests")
	cmd.Flags().StringVar(&o.timing, "timing", "wire", "where a round trip ends: wire (the reply's kernel receive stamp, as iputils ping) or process (the reply read)")
	return cmd
}

type agentSQLProbeOptions struct {
	dsn   string
	runs  int
	calls int
}

func newAgentSQLProbeCmd() *cobra.Command {
	o := &agentSQLProbeOptions{}
	cmd := &cobra.Command{
		Use:   "sqlprobe",
		Short: "SELECT 1 probe through pgx (one round trip per call); prints JSON per run",
		Long: `Runs RUNS × CALLS uncached 'SELECT 1' calls (simple protocol: one round
trip each) on one connection, after a few warmup calls, and prints each
run's median, mean, min, max and failures. The database comes from --dsn or
the PG* environment variables.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if o.runs < 1 || o.runs > 1000 || o.calls < 1 || o.calls > 1000000 {
				return cli.Usagef("--runs 1..1000 and --calls 1..1000000")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := workloads.SelectOne(cmd.Context(), o.dsn, o.runs, o.calls)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(runs)
		},
	}
	cmd.Flags().StringVar(&o.dsn, "dsn", "", "connection string (default: PG* environment)")
	cmd.Flags().IntVar(&o.runs, "runs", 5, "runs")
	cmd.Flags().IntVar(&o.calls, "calls", 200, "calls per run")
	return cmd
}

type agentLoadOptions struct {
	opts    workloads.LoadOptions
	headers []string
	mix     string
	mixJSON string
	paths   []string
	seed    uint64
	timeout time.Duration
}

func newAgentLoadCmd() *cobra.Command {
	o := &agentLoadOptions{}
	cmd := &cobra.Command{
		Use:   "load --url URL (--route PATH | --mix NAME --seed N | --mix-json JSON --seed N | --path P...)",
		Short: "Closed-loop load on one keep-alive connection (or one per request); one JSON line per request",
		Long: `One client, closed loop, one keep-alive connection (--new-conn: a new one
per request, its connect inside each latency): WARMUP requests then
REQUESTS measured requests. Each request's latency comes from the
monotonic clock in nanoseconds. Non-2xx answers and transport errors are
failures: counted and printed, never dropped or retried silently. Each
request carries its sequence number in an X-Rttlab-Seq header (an app
ignores it): a task's captures pair the request with its latency by it.
The last line on stderr is a JSON object with the totals.`,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare() },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.opts.BaseURL, "url", "", "base URL of the app, e.g. http://app:8080")
	cmd.Flags().StringVar(&o.opts.Route, "route", "", "path to request")
	cmd.Flags().StringVar(&o.mix, "mix", "", "weighted request mix: redmine or aimeos")
	cmd.Flags().StringVar(&o.mixJSON, "mix-json", "", `a user's weighted request mix as JSON: [{"name":..., "method":..., "path":..., "headers":{...}, "body":..., "weight":...}, ...]`)
	cmd.Flags().StringArrayVar(&o.paths, "path", nil, "one request's path, in order, warmup first (repeatable; replaces --route and --requests)")
	cmd.Flags().Uint64Var(&o.seed, "seed", 1, "seed of the mix's request sequence")
	cmd.Flags().IntVar(&o.opts.Measured, "requests", 100, "measured requests")
	cmd.Flags().IntVar(&o.opts.Warmup, "warmup", 20, "warmup requests")
	cmd.Flags().StringArrayVar(&o.headers, "header", nil, "extra request header 'Name: value' (repeatable)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", workloads.DefaultRequestTimeout, "per-request timeout")
	cmd.Flags().BoolVar(&o.opts.NewConnPerRequest, "new-conn", false, "a new connection per request (no keep-alive): each latency includes the TCP connect")
	return cmd
}

// prepare checks the URL, the one source of requests and the counts, and
// settles the load's options.
func (o *agentLoadOptions) prepare() error {
	if o.opts.BaseURL == "" {
		return cli.Usagef("--url is required")
	}
	if err := workloads.CheckBaseURL(o.opts.BaseURL); err != nil {
		return cli.Usagef("--url: %v", err)
	}
	if n := btoi(o.opts.Route != "") + btoi(o.mix != "") + btoi(o.mixJSON != "") + btoi(len(o.paths) > 0); n != 1 {
		return cli.Usagef("give one of --route, --mix, --mix-json or --path")
	}
	for _, p := range append([]string{o.opts.Route}, o.paths...) {
		if p == "" {
			continue
		}
		if err := workloads.CheckPath(p); err != nil {
			return cli.Usagef("--route or --path: %v", err)
		}
	}
	if len(o.paths) > 0 {
		o.opts.Requests = o.paths
		o.opts.Measured = len(o.paths) - o.opts.Warmup
		if o.opts.Measured < 1 {
			return cli.Usagef("%d --path requests leave none to measure after --warmup %d", len(o.paths), o.opts.Warmup)
		}
	}
	if o.opts.Measured < 1 || o.opts.Warmup < 0 {
		return cli.Usagef("--requests must be positive and --warmup not negative")
	}
	hdr, err := parseHeaders(o.headers)
	if err != nil {
		return err
	}
	o.opts.Header = hdr
	o.opts.Timeout = o.timeout
	// Every request carries its sequence number (an app ignores the
	// header) for the task's captures to pair it with its latency.
	o.opts.MarkSeq = true
	return nil
}

// run sends the requests (a mix's seeded sequence, when a mix is given),
// a JSON line per request on stdout and the totals on stderr.
func (o *agentLoadOptions) run(cmd *cobra.Command) error {
	if o.mix != "" || o.mixJSON != "" {
		m, err := o.loadMix()
		if err != nil {
			return err
		}
		seq, err := workloads.Sequence(m, o.seed, o.opts.Warmup+o.opts.Measured)
		if err != nil {
			return err
		}
		o.opts.Requests = workloads.Paths(seq)
		if o.mixJSON != "" {
			o.opts.Calls = seq
		}
		o.opts.Route = ""
	}
	w := workloads.NewResultWriter(cmd.OutOrStdout())
	tot, err := workloads.RunLoad(cmd.Context(), o.opts, w.Write)
	b, _ := json.Marshal(tot)
	fmt.Fprintln(cmd.ErrOrStderr(), string(b))
	return err
}

// loadMix returns the mix --mix names or --mix-json defines.
func (o *agentLoadOptions) loadMix() (workloads.Mix, error) {
	switch {
	case o.mixJSON != "":
		dec := json.NewDecoder(strings.NewReader(o.mixJSON))
		dec.DisallowUnknownFields()
		var reqs []workloads.MixRequest
		if err := dec.Decode(&reqs); err != nil {
			return workloads.Mix{}, cli.Usagef("--mix-json: %v", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return workloads.Mix{}, cli.Usagef("--mix-json: text after the JSON array of requests")
		}
		m, err := workloads.RequestMix("request_mix", reqs)
		if err != nil {
			return workloads.Mix{}, cli.Usagef("--mix-json: %v", err)
		}
		return m, nil
	case o.mix == "redmine":
		return workloads.RedmineMix(), nil
	case o.mix == "aimeos":
		return workloads.AimeosMix(workloads.AimeosOptions{})
	}
	return workloads.Mix{}, cli.Usagef("--mix %q: use redmine or aimeos", o.mix)
}

func newAgentIdleCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "idle",
		Short: "Wait until SIGTERM (the client container's main process)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			<-cmd.Context().Done()
			return nil
		},
	}
}

type agentTraceOptions struct {
	db     string
	url    string
	iface  string
	header []string
}

func newAgentTraceCmd() *cobra.Command {
	o := &agentTraceOptions{}
	cmd := &cobra.Command{
		Use:   "trace --db IP:PORT",
		Short: "Send requests read from stdin and count the database round trips and statements each causes",
		Long: `Runs in the app's network namespace (inside its agent, CAP_NET_RAW). Reads
requests as JSON lines {"type":..., "path":...} on stdin, sends them one at
a time to --url, and watches the app<->database TCP traffic on --iface
with a packet socket: per request it prints the round trips (client bursts
answered by the database), statements (Query and Execute messages) and
Parse messages as a JSON line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := netip.ParseAddrPort(o.db)
			if err != nil {
				return cli.Usagef("--db %q: use IP:PORT", o.db)
			}
			hdr, err := parseHeaders(o.header)
			if err != nil {
				return err
			}
			var reqs []workloads.Request
			dec := json.NewDecoder(cmd.InOrStdin())
			for {
				var r workloads.Request
				if err := dec.Decode(&r); err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					return fmt.Errorf("trace: request %d on stdin: %w", len(reqs)+1, err)
				}
				reqs = append(reqs, r)
			}
			w, err := workloads.OpenWire(o.iface, db)
			if err != nil {
				return err
			}
			defer w.Close()
			res, err := workloads.Trace(cmd.Context(), w, o.url, reqs, hdr)
			enc := json.NewEncoder(cmd.OutOrStdout())
			for _, r := range res {
				if eerr := enc.Encode(r); eerr != nil {
					return eerr
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&o.db, "db", "", "database address IP:PORT")
	cmd.Flags().StringVar(&o.url, "url", "http://127.0.0.1:8080", "the app's base URL")
	cmd.Flags().StringVar(&o.iface, "iface", "eth0", "interface to watch")
	cmd.Flags().StringArrayVar(&o.header, "header", nil, "extra request header 'Name: value'")
	return cmd
}

// parseHeaders reads repeated --header 'Name: value' flags.
func parseHeaders(hs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, cli.Usagef("--header %q: use 'Name: value'", h)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
