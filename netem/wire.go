package netem

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The wire hook holds packets on a bridge in the engine host's network
// namespace, through bridge netfilter: a packet a container sends crosses
// its veth, is stamped on arrival at the bridge port, and is held in the
// host's mangle PREROUTING before it is bridged to the receiver's veth.
// Crossing into the receiver's namespace clears the stamp, so the
// receiver's kernel (ping's SO_TIMESTAMP, tcpdump, the application) sees
// the packet after the hold, as it would behind a wire or netem on the
// sender's link.

// WireCommentPrefix starts the comment of every rule a wire shaper adds
// in the host's tables; the rest is the shaper's label.
const WireCommentPrefix = "rttlab:"

// bridgeNFCall is the sysctl that sends bridged IPv4 packets through
// iptables.
const bridgeNFCall = "/proc/sys/net/bridge/bridge-nf-call-iptables"

func wireComment(label string) string { return WireCommentPrefix + label }

// BridgeAuto asks the wire hook to find its bridge itself (bridgeTo).
const BridgeAuto = "auto"

// bridgeTo is the bridge of the calling thread's namespace that src is
// reached through: the device of the route to src, which must be a
// bridge (a node whose pods are ports of one, as with the CNI bridge
// plugin; a routed CNI gives each pod a link of its own, which the wire
// hook cannot hold on).
func bridgeTo(src netip.Addr) (string, error) {
	if !src.IsValid() {
		return "", errors.New("wire hook: no address of the shaped container given (--src)")
	}
	routes, err := netlink.RouteGet(net.IP(src.Unmap().AsSlice()))
	if err != nil || len(routes) == 0 {
		return "", fmt.Errorf("wire hook: no route to %s in this network namespace (%v): run on the node's network", src, err)
	}
	l, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return "", fmt.Errorf("wire hook: the link of the route to %s: %w", src, err)
	}
	if l.Type() != "bridge" {
		return "", fmt.Errorf("wire hook: %s is reached through %s, a %s, not a bridge: this node's pods are not ports of a bridge", src, l.Attrs().Name, l.Type())
	}
	return l.Attrs().Name, nil
}

// checkWire validates the wire hook's options and that the host can run
// it: the bridge exists in the caller's namespace (the shaper runs on the
// host's network) and bridge netfilter is on there.
func checkWire(o Options) error {
	if o.Bridge == "" {
		return errors.New("wire hook: no bridge given (--bridge)")
	}
	if !o.Src.IsValid() || o.Src.IsUnspecified() {
		return errors.New("wire hook: no address of the shaped container given (--src)")
	}
	if o.Label == "" || strings.ContainsAny(o.Label, " \t\n\"'") || len(o.Label) > 200 {
		return fmt.Errorf("wire hook: label %q: give a unique name without spaces or quotes, at most 200 bytes (--label)", o.Label)
	}
	l, err := netlink.LinkByName(o.Bridge)
	if err != nil {
		return fmt.Errorf("wire hook: bridge %s not found in this network namespace (%v): run on the engine host's network", o.Bridge, err)
	}
	if l.Type() != "bridge" {
		return fmt.Errorf("wire hook: %s is a %s, not a bridge", o.Bridge, l.Type())
	}
	return BridgeNetfilter()
}

// BridgeNetfilter reports whether bridged IPv4 packets go through
// iptables in the calling thread's network namespace, which the wire hook
// needs; the error names the fix.
func BridgeNetfilter() error {
	b, err := os.ReadFile(bridgeNFCall)
	if errors.Is(err, os.ErrNotExist) {
		return errors.New("bridge netfilter is missing (no " + bridgeNFCall + "): load it with `modprobe br_netfilter`, or use a host with kernel netem")
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", bridgeNFCall, err)
	}
	if strings.TrimSpace(string(b)) != "1" {
		return errors.New("bridge netfilter is off (" + bridgeNFCall + " is " + strings.TrimSpace(string(b)) + "): turn it on with `sysctl -w net.bridge.bridge-nf-call-iptables=1`")
	}
	return nil
}

// bindQueue opens the shaper's queue in the calling thread's namespace:
// opts.QueueNum, or for the wire hook with QueueNum 0 the first free
// queue from a start derived from the label (the host's queues are shared
// by every run on it).
func bindQueue(opts Options) (*nfqSocket, uint16, error) {
	if opts.QueueNum != 0 {
		s, err := openNFQueue(opts.QueueNum, queueMaxLen)
		return s, opts.QueueNum, err
	}
	h := fnv.New32a()
	h.Write([]byte(opts.Label))
	start := 10000 + h.Sum32()%50000
	const tries = 64
	var err error
	for i := uint32(0); i < tries; i++ {
		q := uint16(start + i)
		var s *nfqSocket
		if s, err = openNFQueue(q, queueMaxLen); err == nil {
			return s, q, nil
		}
		if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EEXIST) {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("no free NFQUEUE among %d..%d (taken, or no CAP_NET_ADMIN): %w", start, start+tries-1, err)
}

// wireRules are the rules of the wire hook: on the bridge, the packets
// Src sends (to the peers in path scope), caught where they enter the
// bridge from a port (--physdev-is-in), so nothing routed through the
// host is held.
func (u *userspace) wireRules(c Config) []iptRule {
	bin, mask := "iptables", "/32"
	if u.opts.Src.Unmap().Is6() {
		bin, mask = "ip6tables", "/128"
	}
	head := "-i " + u.opts.Bridge + " -s " + u.opts.Src.Unmap().String() + mask
	tail := fmt.Sprintf("-m physdev --physdev-is-in -m comment --comment %s -j NFQUEUE --queue-num %d", u.comment(), u.opts.QueueNum)
	if c.Scope() == "interface" {
		return []iptRule{{bin, "PREROUTING", head + " " + tail}}
	}
	var out []iptRule
	for _, e := range c.Entries() {
		p := e.Peer.Unmap()
		if p.Is6() != u.opts.Src.Unmap().Is6() {
			continue // no packet of Src's family goes there
		}
		r := iptRule{bin, "PREROUTING", head + " -d " + p.String() + mask + " " + tail}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// SweepWire removes, in the caller's network namespace (the engine
// host's), every mangle rule whose comment is a wire shaper's with a
// label starting with labelPrefix ("" = every rttlab wire rule). It is how
// a run's cleanup and `rttlab clean` remove what a killed shaper left in
// the host's tables. It returns the rules removed; with list, it removes
// nothing and returns the rules it would remove.
func SweepWire(labelPrefix string, list bool) ([]string, error) {
	return sweepRules("", func(f []string) bool { return wireRuleOf(f, labelPrefix) }, list)
}

// sweepRules removes (with list: only lists) the mangle PREROUTING and
// POSTROUTING rules of iptables and ip6tables, in the network namespace
// at nsPath ("" = the caller's), whose fields (as `iptables -S` prints
// them) match accepts.
func sweepRules(nsPath string, match func(fields []string) bool, list bool) ([]string, error) {
	var found []string
	var errs []error
	err := inNetNS(nsPath, func() error {
		for _, bin := range []string{"iptables", "ip6tables"} {
			if _, err := exec.LookPath(bin); err != nil {
				continue
			}
			for _, chain := range []string{"PREROUTING", "POSTROUTING"} {
				out, err := iptables(bin, "-w", "-t", "mangle", "-S", chain)
				if err != nil {
					return err // cannot read the table: nothing else will work
				}
				for _, line := range strings.Split(out, "\n") {
					f := strings.Fields(line)
					if len(f) < 3 || f[0] != "-A" || !match(f) {
						continue
					}
					if !list {
						if _, err := iptables(bin, append([]string{"-w", "-t", "mangle", "-D", chain}, unquote(f[2:])...)...); err != nil {
							errs = append(errs, err)
							continue
						}
						slog.Info("removed shaping rule", "rule", line)
					}
					found = append(found, line)
				}
			}
		}
		return nil
	})
	return found, errors.Join(append(errs, err)...)
}

// ruleComment is the comment of a rule's fields, unquoted, or "".
func ruleComment(fields []string) string {
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] == "--comment" {
			return strings.Trim(fields[i+1], `"`)
		}
	}
	return ""
}

// wireRuleOf reports whether a rule's fields carry a wire comment whose
// label starts with prefix.
func wireRuleOf(fields []string, prefix string) bool {
	return strings.HasPrefix(ruleComment(fields), WireCommentPrefix+prefix)
}

func unquote(fs []string) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		if u, err := strconv.Unquote(f); err == nil && strings.HasPrefix(f, `"`) {
			f = u
		}
		out[i] = f
	}
	return out
}
