package netem

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Config is one shaping setting of one network namespace: a one-way
// delay on the packets exchanged with Peers (path scope) or, when Peers is
// empty, on all traffic of the link (interface scope). PeerDelays gives
// peers delays of their own (path scope, one delay per peer), for
// topologies where one namespace talks to several peers over links of
// different lengths; Delay and Peers are then ignored.
//
// Which direction is delayed depends on the shaper's hook (Direction):
// the kernel shaper and the userspace shaper's wire and egress hooks
// delay the packets sent to the peers, the userspace ingress hook the
// packets that arrive from them.
type Config struct {
	Delay      time.Duration
	Peers      []netip.Addr // empty = all traffic of the link (interface scope)
	PeerDelays []PeerDelay  // per-peer delays; when set, Delay and Peers are ignored
	// Floor is added to every shaped packet's delay, a peer's zero
	// included. The userspace shaper needs it where its own pass (the
	// wait to be read plus the verdict, ~0.2 ms a packet on a busy
	// 2-vCPU host) is longer than a delay: it holds from the kernel's
	// receive stamp, so a packet read after its due time leaves at once
	// and a delay shorter than the pass is absorbed. With a floor above
	// the pass every packet leaves at stamp + floor + delay, and a change
	// against the zero setting at the same floor is the delay alone.
	Floor time.Duration
}

// Effective returns c with the floor added to each delay (and Floor 0):
// the delays the shaper applies.
func (c Config) Effective() Config {
	if c.Floor == 0 {
		return c
	}
	e := Config{Delay: c.Delay + c.Floor, Peers: c.Peers}
	for _, pd := range c.PeerDelays {
		e.PeerDelays = append(e.PeerDelays, PeerDelay{Peer: pd.Peer, Delay: pd.Delay + c.Floor})
	}
	return e
}

// PeerDelay is the one-way delay of the packets exchanged with one peer.
type PeerDelay struct {
	Peer  netip.Addr
	Delay time.Duration
}

// Entries lists the (peer, delay) pairs of a path-scope Config, and
// nothing for interface scope.
func (c Config) Entries() []PeerDelay {
	if len(c.PeerDelays) > 0 {
		return c.PeerDelays
	}
	out := make([]PeerDelay, 0, len(c.Peers))
	for _, p := range c.Peers {
		out = append(out, PeerDelay{Peer: p, Delay: c.Delay})
	}
	return out
}

// Scope names the scope of c: "path" or "interface".
func (c Config) Scope() string {
	if len(c.Peers) > 0 || len(c.PeerDelays) > 0 {
		return "path"
	}
	return "interface"
}

// Validate checks the delay range and the peer addresses.
func (c Config) Validate() error {
	if err := ValidateDelay(c.Delay); err != nil {
		return err
	}
	if err := ValidateDelay(c.Floor); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if c.Delay+c.Floor > MaxDelay {
		return fmt.Errorf("delay %v + floor %v is above the %v maximum", c.Delay, c.Floor, MaxDelay)
	}
	for _, p := range c.Peers {
		if !p.IsValid() || p.IsUnspecified() {
			return fmt.Errorf("peer %q is not a usable address", p)
		}
	}
	seen := map[netip.Addr]bool{}
	for _, e := range c.PeerDelays {
		if !e.Peer.IsValid() || e.Peer.IsUnspecified() {
			return fmt.Errorf("peer %q is not a usable address", e.Peer)
		}
		if seen[e.Peer.Unmap()] {
			return fmt.Errorf("peer %s has two delays: give each peer once", e.Peer)
		}
		seen[e.Peer.Unmap()] = true
		if err := ValidateDelay(e.Delay); err != nil {
			return fmt.Errorf("peer %s: %w", e.Peer, err)
		}
		if e.Delay+c.Floor > MaxDelay {
			return fmt.Errorf("peer %s: delay %v + floor %v is above the %v maximum", e.Peer, e.Delay, c.Floor, MaxDelay)
		}
	}
	return nil
}

// Direction names where a shaper holds packets: the userspace shaper's
// hook (wire or egress hold the packets sent to the peers, ingress those
// arriving from them), or "egress" for the kernel shaper, which delays on
// the sender's link.
func Direction(s Shaper) string {
	if d, ok := s.(interface{ Hook() string }); ok {
		return d.Hook()
	}
	return HookEgress
}

// Shaper delays the packets of one network namespace: those it sends
// (kernel netem on its link; the userspace wire hook on the bridge, before
// the receiver sees them), or those it receives (userspace ingress hook).
type Shaper interface {
	Set(ctx context.Context, c Config) error // replace the current setting
	Clear(ctx context.Context) error         // remove everything it added
	Close() error                            // Clear + release
	Backend() string                         // "kernel" or "userspace"
}

// Health is an optional add-on of a Shaper whose work can fail after Set
// returned (the userspace shaper's packet loop). Done is closed when that
// work stops; Err returns nil while it runs and the cause once it stopped.
type Health interface {
	Done() <-chan struct{}
	Err() error
}

// Backend names.
const (
	BackendAuto      = "auto"
	BackendKernel    = "kernel"
	BackendUserspace = "userspace"
)

// DefaultQueueNum is the NFQUEUE number used when Options.QueueNum is 0.
const DefaultQueueNum = 7274

// Options selects and places a shaper.
type Options struct {
	Backend  string // "auto" (default), "kernel" or "userspace"
	Link     string // egress interface; default: the default route's, else the first non-loopback
	QueueNum uint16 // NFQUEUE number of the userspace shaper; 0 = DefaultQueueNum
	NetNS    string // network namespace file to shape (tests); empty = the caller's
	// Hook (userspace shaper): "wire" holds the packets Src sends, on
	// Bridge in the caller's namespace (the engine host's), timed from the bridge port's
	// receive stamp, before the receiver's namespace sees them (as netem
	// on the sender's link does); "ingress" (default) holds the packets
	// that arrive from the peers, timed from the kernel's receive stamp,
	// after the receiver's kernel stamped them; "egress" holds the packets
	// sent to them, timed from the read.
	Hook string
	// Bridge (wire hook) is the bridge the shaped container's link is a
	// port of: only packets bridged on it are held. BridgeAuto: the
	// bridge this namespace routes Src through (a Kubernetes node's pod
	// bridge, whose name the controller does not know).
	Bridge string
	// Src (wire hook) is the shaped container's address: only packets it
	// sends are held.
	Src netip.Addr
	// Label (wire hook) names the shaper's rules (iptables comment
	// "rttlab:<Label>"); it must be unique on the host. Rules found with
	// it at start are stale (a killed shaper's) and removed.
	Label string
	// Hot (userspace shaper): after each packet the loop keeps reading
	// without sleeping for this long, yielding the CPU between reads, so
	// that the next packet of an exchange is read at once. 0 = sleep.
	Hot time.Duration
}

// Userspace shaper hooks.
const (
	HookIngress = "ingress"
	HookEgress  = "egress"
	HookWire    = "wire"
)

// Info says which backend runs and why.
type Info struct {
	Backend string `json:"backend"`
	Why     string `json:"why"`
	Link    string `json:"link"`
}

// New creates a shaper in the namespace and on the link chosen by opts. The
// shaper starts with nothing applied; call Set. With Backend "auto" it
// tries kernel netem for real (adds and removes a netem qdisc) and falls
// back to the userspace NFQUEUE shaper when the kernel lacks netem.
func New(ctx context.Context, opts Options) (Shaper, Info, error) {
	if opts.QueueNum == 0 && opts.Hook != HookWire {
		opts.QueueNum = DefaultQueueNum // a wire shaper picks a free queue of the host
	}
	link, err := resolveLink(opts.NetNS, opts.Link)
	if err != nil {
		return nil, Info{}, err
	}
	opts.Link = link
	info := Info{Link: link}
	switch opts.Backend {
	case "", BackendAuto:
		k, kerr := newKernel(ctx, opts)
		if kerr == nil {
			info.Backend, info.Why = BackendKernel, "auto: kernel netem works on "+link
			return k, info, nil
		}
		if !NetemUnavailable(kerr) {
			return nil, info, fmt.Errorf("auto: %w", kerr)
		}
		u, uerr := newUserspace(ctx, opts)
		if uerr != nil {
			return nil, info, fmt.Errorf("auto: kernel netem unavailable (%v); userspace NFQUEUE: %w", kerr, uerr)
		}
		info.Backend = BackendUserspace
		info.Why = fmt.Sprintf("auto: kernel netem unavailable (%q), using userspace NFQUEUE %d; %s", kernelWords(kerr), u.opts.QueueNum, u.detail)
		info.Link = u.link()
		return u, info, nil
	case BackendKernel:
		k, err := newKernel(ctx, opts)
		if err != nil {
			return nil, info, err
		}
		info.Backend, info.Why = BackendKernel, "requested"
		return k, info, nil
	case BackendUserspace:
		u, err := newUserspace(ctx, opts)
		if err != nil {
			return nil, info, err
		}
		info.Backend, info.Why = BackendUserspace, fmt.Sprintf("requested, NFQUEUE %d; %s", u.opts.QueueNum, u.detail)
		info.Link = u.link()
		return u, info, nil
	}
	return nil, info, fmt.Errorf("unknown shaper backend %q: use auto, kernel or userspace", opts.Backend)
}

// errNetemUnavailable marks a failed kernel netem probe.
var errNetemUnavailable = errors.New("kernel netem unavailable")

// NetemUnavailable reports whether err says the kernel cannot run netem
// (no sch_netem: "Specified qdisc kind is unknown", ENOENT, EOPNOTSUPP).
func NetemUnavailable(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, errNetemUnavailable) ||
		errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) ||
		strings.Contains(err.Error(), "qdisc kind is unknown")
}

// kernelWords extracts the kernel's extended-ack text from a netlink error
// ("no such file or directory: Specified qdisc kind is unknown." gives the
// part after the errno), or the whole error when there is none.
func kernelWords(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return strings.TrimSuffix(s[i+2:], ".")
	}
	return s
}

// resolveLink returns name if it exists in the namespace, or picks the
// interface of the IPv4 (then IPv6) default route, else the first
// non-loopback interface that is up.
func resolveLink(nsPath, name string) (string, error) {
	var out string
	err := inNetNS(nsPath, func() error {
		if name != "" {
			if _, err := netlink.LinkByName(name); err != nil {
				return fmt.Errorf("link %q: %w", name, err)
			}
			out = name
			return nil
		}
		for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			routes, err := netlink.RouteList(nil, fam)
			if err != nil {
				return fmt.Errorf("list routes: %w", err)
			}
			for _, r := range routes {
				if (r.Dst == nil || r.Dst.IP.IsUnspecified()) && r.LinkIndex > 0 {
					l, err := netlink.LinkByIndex(r.LinkIndex)
					if err == nil {
						out = l.Attrs().Name
						return nil
					}
				}
			}
		}
		links, err := netlink.LinkList()
		if err != nil {
			return fmt.Errorf("list links: %w", err)
		}
		for _, l := range links {
			a := l.Attrs()
			if a.Flags&net.FlagUp != 0 && a.EncapType != "loopback" && a.Name != "lo" {
				out = a.Name
				return nil
			}
		}
		return fmt.Errorf("no egress interface found: pass the link name")
	})
	return out, err
}
