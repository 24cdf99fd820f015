package netem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
)

// Request is one command to the agent, sent as JSON over its unix socket.
type Request struct {
	Op         string          `json:"op"`                    // "set", "clear", "show" or "ping"
	DelayNs    int64           `json:"delay_ns,omitempty"`    // set: one-way delay in ns
	Peers      []string        `json:"peers,omitempty"`       // set: path scope peers; empty = interface scope
	PeerDelays []PeerDelayJSON `json:"peer_delays,omitempty"` // set: a delay per peer (instead of delay_ns and peers)
	FloorNs    int64           `json:"floor_ns,omitempty"`    // set: added to every shaped packet's delay (Config.Floor)
}

// CtlFlags says which of the delay flags a `rttlab agent ctl` command
// line gives: --delay, --floor, how many --peer and how many --peer-delay.
type CtlFlags struct {
	Delay, Floor      bool
	Peers, PeerDelays int
}

// CheckCtlFlags says whether op takes the flags f: set takes --delay
// (with --peer and --floor) or --peer-delay, not both, and --peer-delay
// names its peers itself; clear, show and ping take none of them. The
// agent's command line and the stand-in agents of tests both ask it.
func CheckCtlFlags(op string, f CtlFlags) error {
	switch op {
	case "set":
		if f.Delay == (f.PeerDelays > 0) {
			return errors.New("ctl set needs --delay (e.g. --delay 250us) or --peer-delay IP=D, not both")
		}
		if f.PeerDelays > 0 && f.Peers > 0 {
			return errors.New("ctl set: --peer goes with --delay; --peer-delay IP=D names its peer itself")
		}
	case "clear", "show", "ping":
		if f.Delay || f.Floor || f.Peers > 0 || f.PeerDelays > 0 {
			return fmt.Errorf("ctl %s takes no --delay, --floor, --peer or --peer-delay: they are set's", op)
		}
	default:
		return fmt.Errorf("ctl %q: use set, clear, show or ping", op)
	}
	return nil
}

// PeerDelayJSON is a PeerDelay on the agent's socket.
type PeerDelayJSON struct {
	Peer    string `json:"peer"`
	DelayNs int64  `json:"delay_ns"`
}

// Reply is the agent's answer. Active says whether a setting is applied
// (false after clear and before the first set).
type Reply struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
	Backend string `json:"backend,omitempty"`
	Why     string `json:"why,omitempty"`
	Link    string `json:"link,omitempty"`
	// Direction says which packets the shaper delays: "ingress" (arriving
	// from the peers) or "egress" (sent to them).
	Direction  string          `json:"direction,omitempty"`
	Active     bool            `json:"active"`
	DelayNs    int64           `json:"delay_ns"`
	Peers      []string        `json:"peers,omitempty"`
	PeerDelays []PeerDelayJSON `json:"peer_delays,omitempty"`
	FloorNs    int64           `json:"floor_ns,omitempty"`
	Scope      string          `json:"scope,omitempty"` // "path" or "interface" while active
	Stats      *Stats          `json:"stats,omitempty"` // userspace shaper: what it did since it started
}

// agentIOTimeout bounds one request/reply exchange.
const agentIOTimeout = 30 * time.Second

// Serve creates the shaper described by opts and answers Requests on a unix
// socket at socketPath until ctx is done; then it removes everything the
// shaper added and the socket file. If the shaper's packet loop dies, Serve
// answers requests with the cause, returns an error, and leaves the
// userspace queue rules in place so traffic stays stopped instead of
// passing unshaped (a new agent on the same queue removes them).
func Serve(ctx context.Context, socketPath string, opts Options) error {
	sh, info, err := New(ctx, opts)
	if err != nil {
		return err
	}
	slog.Info("shaper ready", "backend", info.Backend, "why", info.Why, "link", info.Link)
	a := &agent{shaper: sh, info: info}
	ln, err := listenUnix(socketPath)
	if err != nil {
		return errors.Join(err, sh.Close())
	}
	defer os.Remove(socketPath)

	serveErr := make(chan error, 1)
	go func() { serveErr <- a.serve(ln) }()

	var dead <-chan struct{}
	if h, ok := sh.(Health); ok {
		dead = h.Done()
	}
	select {
	case <-ctx.Done():
		ln.Close()
		<-serveErr
		a.mu.Lock()
		defer a.mu.Unlock()
		if err := sh.Close(); err != nil {
			return fmt.Errorf("agent: remove shaping: %w", err)
		}
		return nil
	case <-dead:
		lerr := sh.(Health).Err()
		// Give clients a moment to see the cause, then stop.
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
		ln.Close()
		<-serveErr
		a.mu.Lock()
		defer a.mu.Unlock()
		if r, ok := sh.(interface{ release() error }); ok {
			_ = r.release()
		}
		return fmt.Errorf("agent: shaper loop died, queue rules left in place so traffic stays stopped: %w", lerr)
	case err := <-serveErr:
		return errors.Join(fmt.Errorf("agent: %w", err), sh.Close())
	}
}

// listenUnix listens on path, replacing a stale socket file that nobody
// serves.
func listenUnix(path string) (net.Listener, error) {
	if _, err := os.Stat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("agent: another agent serves on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("agent: remove stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("agent: listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("agent: chmod %s: %w", path, err)
	}
	return ln, nil
}

type agent struct {
	shaper Shaper
	info   Info

	mu     sync.Mutex
	active bool
	cur    Config
}

func (a *agent) serve(ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.handleConn(c)
		}()
	}
}

func (a *agent) handleConn(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(agentIOTimeout))
	var req Request
	var rep Reply
	if err := json.NewDecoder(c).Decode(&req); err != nil {
		rep = Reply{Error: fmt.Sprintf("bad request: %v", err)}
	} else {
		rep = a.handle(req)
	}
	if err := json.NewEncoder(c).Encode(rep); err != nil {
		slog.Warn("agent: write reply", "err", err)
	}
}

// handle executes one request; requests are serialized.
func (a *agent) handle(req Request) Reply {
	a.mu.Lock()
	defer a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), agentIOTimeout)
	defer cancel()
	var err error
	if h, ok := a.shaper.(Health); ok {
		if herr := h.Err(); herr != nil {
			err = fmt.Errorf("shaper loop died: %w", herr)
		}
	}
	if err == nil {
		switch req.Op {
		case "ping", "show":
		case "set":
			var c Config
			c, err = req.config()
			if err == nil {
				err = a.shaper.Set(ctx, c)
			}
			if err == nil {
				a.active, a.cur = true, c
			}
		case "clear":
			err = a.shaper.Clear(ctx)
			if err == nil {
				a.active, a.cur = false, Config{}
			}
		default:
			err = fmt.Errorf("unknown op %q: use set, clear, show or ping", req.Op)
		}
	}
	rep := Reply{OK: err == nil, Backend: a.info.Backend, Why: a.info.Why, Link: a.info.Link, Active: a.active,
		Direction: Direction(a.shaper)}
	if sr, ok := a.shaper.(StatsReporter); ok {
		st := sr.Stats()
		rep.Stats = &st
	}
	if err != nil {
		rep.Error = err.Error()
	}
	if a.active {
		rep.DelayNs = int64(a.cur.Delay)
		rep.FloorNs = int64(a.cur.Floor)
		rep.Scope = a.cur.Scope()
		for _, p := range a.cur.Peers {
			rep.Peers = append(rep.Peers, p.String())
		}
		for _, e := range a.cur.PeerDelays {
			rep.PeerDelays = append(rep.PeerDelays, PeerDelayJSON{Peer: e.Peer.String(), DelayNs: int64(e.Delay)})
		}
	}
	return rep
}

// config converts a set request into a validated Config.
func (r Request) config() (Config, error) {
	c := Config{Delay: time.Duration(r.DelayNs), Floor: time.Duration(r.FloorNs)}
	for _, s := range r.Peers {
		p, err := netip.ParseAddr(s)
		if err != nil {
			return Config{}, fmt.Errorf("peer %q is not an IP address", s)
		}
		c.Peers = append(c.Peers, p.Unmap())
	}
	for _, e := range r.PeerDelays {
		p, err := netip.ParseAddr(e.Peer)
		if err != nil {
			return Config{}, fmt.Errorf("peer %q is not an IP address", e.Peer)
		}
		c.PeerDelays = append(c.PeerDelays, PeerDelay{Peer: p.Unmap(), Delay: time.Duration(e.DelayNs)})
	}
	if len(c.PeerDelays) > 0 && (len(c.Peers) > 0 || c.Delay != 0) {
		return Config{}, fmt.Errorf("give either peer_delays or delay_ns with peers, not both")
	}
	return c, c.Validate()
}

// Ctl sends one request to the agent at socketPath and returns its reply.
// A reply with ok=false is returned together with an error carrying its
// message.
func Ctl(ctx context.Context, socketPath string, req Request) (Reply, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return Reply{}, fmt.Errorf("connect to agent at %s: %w", socketPath, err)
	}
	defer c.Close()
	deadline := time.Now().Add(agentIOTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return Reply{}, fmt.Errorf("send to agent: %w", err)
	}
	var rep Reply
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		return Reply{}, fmt.Errorf("read agent reply: %w", err)
	}
	if !rep.OK {
		return rep, fmt.Errorf("agent: %s", rep.Error)
	}
	return rep, nil
}
