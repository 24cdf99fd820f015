package netem

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Handles of the qdiscs the kernel shaper adds. Only qdiscs with these
// handles are ever removed.
const (
	kernelMajor      = 0x7274 // "rt"
	kernelNetemMajor = 0x7275
	// Bands 1-3 copy pfifo_fast's priority map so that traffic not sent
	// to a peer is scheduled as before; bands 4 and up hold one netem
	// each, one per distinct delay (prio has at most 16 bands).
	kernelFirstNetemBand = 4
	kernelMaxDelays      = 16 - 3
)

// netemLimit is netem's queue length in packets: MaxDelay x 100k packets/s,
// so that no packet is dropped for lack of room at the highest delay.
const netemLimit = uint32(MaxDelay/time.Second) * 100_000

// netemFIFORate (bytes/s) keeps each netem's queue in order. netem
// orders its queue by send time, so after a delay goes down a packet
// sent under the new delay is due before those still held under the old
// one, and overtakes them (seen on a real kernel: a few datagrams of a
// steady stream, on every change down). With a rate set, netem sends a
// packet no earlier than the last one queued, plus its transmission time
// at the rate: at 2^40 bytes/s (8.8 Tbit/s) that is 60 ns for a 64 KB
// packet, so in steady state every packet still leaves at its arrival
// plus the delay, and after a change down the new delay takes over as
// the packets held under the old one leave.
const netemFIFORate = 1 << 40

// kernelShaper shapes with tc netem through netlink in the target namespace.
type kernelShaper struct {
	nsPath string
	link   string

	mu      sync.Mutex
	applied bool
	cur     Config
}

func newKernel(ctx context.Context, opts Options) (*kernelShaper, error) {
	// Ask the kernel for extended acks, so its own words ("Specified qdisc
	// kind is unknown") reach the user. It applies to the package-level
	// netlink calls below, which open one socket per request in the
	// calling thread's namespace.
	nl.EnableErrorMessageReporting = true
	k := &kernelShaper{nsPath: opts.NetNS, link: opts.Link}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	err := k.do(func(idx int) error {
		if err := removeOwnRoot(idx); err != nil {
			return err
		}
		probe := netemQdisc(idx, netlink.HANDLE_ROOT, netlink.MakeHandle(kernelMajor, 0), 0)
		if err := netlink.QdiscAdd(probe); err != nil {
			if NetemUnavailable(err) {
				return fmt.Errorf("%w: add netem qdisc on %s: %w", errNetemUnavailable, k.link, err)
			}
			return k.addErr("add netem qdisc", err)
		}
		if err := netlink.QdiscDel(probe); err != nil {
			return fmt.Errorf("remove probe netem qdisc on %s: %w", k.link, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

func (k *kernelShaper) Backend() string { return BackendKernel }

// do runs fn in the shaper's namespace with the link's index.
func (k *kernelShaper) do(fn func(linkIndex int) error) error {
	return inNetNS(k.nsPath, func() error {
		l, err := netlink.LinkByName(k.link)
		if err != nil {
			return fmt.Errorf("link %q: %w", k.link, err)
		}
		return fn(l.Attrs().Index)
	})
}

func (k *kernelShaper) addErr(what string, err error) error {
	switch {
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%s on %s: %w: the shaper needs CAP_NET_ADMIN", what, k.link, err)
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("%s on %s: %w: the link already has a root qdisc that rttlab did not add; remove it (tc qdisc del dev %s root) or use --shaper userspace", what, k.link, err, k.link)
	}
	return fmt.Errorf("%s on %s: %w", what, k.link, err)
}

func (k *kernelShaper) Set(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	c = c.Effective() // netem holds floor + delay
	if err := ctx.Err(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(groupDelays(c)) > kernelMaxDelays {
		return fmt.Errorf("%d distinct peer delays: the kernel shaper takes at most %d on one link", len(groupDelays(c)), kernelMaxDelays)
	}
	sameShape := k.applied && sameGrouping(k.cur, c)
	err := k.do(func(idx int) error {
		qdiscs, filters := kernelPlan(idx, c)
		if sameShape {
			// Only the delays change: change each netem in place, nothing
			// is dropped, and the order is kept (netemFIFORate).
			for _, q := range qdiscs {
				n, ok := q.(*netlink.Netem)
				if !ok {
					continue
				}
				if err := netlink.QdiscChange(n); err != nil {
					return k.addErr("change netem delay", err)
				}
			}
			return k.readBack(idx, qdiscs)
		}
		if err := removeOwnRoot(idx); err != nil {
			return err
		}
		k.applied = false
		for _, q := range qdiscs {
			if err := netlink.QdiscAdd(q); err != nil {
				_ = removeOwnRoot(idx)
				return k.addErr("add "+q.Type()+" qdisc", err)
			}
		}
		for _, f := range filters {
			if err := netlink.FilterAdd(f); err != nil {
				_ = removeOwnRoot(idx)
				return k.addErr("add u32 filter", err)
			}
		}
		return k.readBack(idx, qdiscs)
	})
	if err != nil {
		return err
	}
	k.applied = true
	k.cur = Config{Delay: c.Delay, Peers: slices.Clone(c.Peers), PeerDelays: slices.Clone(c.PeerDelays)}
	return nil
}

// readBack lists the link's qdiscs and checks that every netem the plan
// asked for is there with the latency and limit it was given.
func (k *kernelShaper) readBack(linkIndex int, want []netlink.Qdisc) error {
	link, err := netlink.LinkByIndex(linkIndex)
	if err != nil {
		return fmt.Errorf("read back qdiscs: %w", err)
	}
	got, err := netlink.QdiscList(link)
	if err != nil {
		return fmt.Errorf("read back qdiscs on %s: %w", k.link, err)
	}
	return checkNetems(want, got)
}

// checkNetems compares the netem qdiscs of a plan with those listed by the
// kernel, by handle: latency (in the kernel's ticks, as netlink reports
// it), limit and rate must match.
func checkNetems(want, got []netlink.Qdisc) error {
	for _, w := range want {
		wn, ok := w.(*netlink.Netem)
		if !ok {
			continue
		}
		var found *netlink.Netem
		for _, g := range got {
			if gn, ok := g.(*netlink.Netem); ok && gn.Handle == wn.Handle {
				found = gn
			}
		}
		if found == nil {
			return fmt.Errorf("read back: netem %x:%x is missing after it was set", wn.Handle>>16, wn.Handle&0xffff)
		}
		if found.Latency != wn.Latency || found.Limit != wn.Limit || found.Rate64 != wn.Rate64 {
			return fmt.Errorf("read back: netem %x: latency %d limit %d rate %d, set %d, %d and %d",
				wn.Handle>>16, found.Latency, found.Limit, found.Rate64, wn.Latency, wn.Limit, wn.Rate64)
		}
	}
	return nil
}

// groupDelays lists the distinct delays of a path-scope Config in the
// order of their first peer.
func groupDelays(c Config) []time.Duration {
	var ds []time.Duration
	for _, e := range c.Entries() {
		if !slices.Contains(ds, e.Delay) {
			ds = append(ds, e.Delay)
		}
	}
	return ds
}

// sameGrouping reports whether two Configs need the same qdiscs and
// filters: the same scope, the same peers in the same order, grouped the
// same way into delays (only the delay values may differ).
func sameGrouping(a, b Config) bool {
	if a.Scope() != b.Scope() {
		return false
	}
	ea, eb := a.Entries(), b.Entries()
	if len(ea) != len(eb) {
		return false
	}
	ga, gb := groupDelays(a), groupDelays(b)
	if len(ga) != len(gb) {
		return false
	}
	for i := range ea {
		if ea[i].Peer != eb[i].Peer || slices.Index(ga, ea[i].Delay) != slices.Index(gb, eb[i].Delay) {
			return false
		}
	}
	return true
}

func (k *kernelShaper) Clear(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.do(removeOwnRoot); err != nil {
		return err
	}
	k.applied = false
	k.cur = Config{}
	return nil
}

func (k *kernelShaper) Close() error {
	return k.Clear(context.Background())
}

// removeOwnRoot deletes the link's root qdisc if, and only if, it carries
// the kernel shaper's handle; children and filters go with it.
func removeOwnRoot(linkIndex int) error {
	link, err := netlink.LinkByIndex(linkIndex)
	if err != nil {
		return fmt.Errorf("link %d: %w", linkIndex, err)
	}
	qs, err := netlink.QdiscList(link)
	if err != nil {
		return fmt.Errorf("list qdiscs on %s: %w", link.Attrs().Name, err)
	}
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent == netlink.HANDLE_ROOT && a.Handle == netlink.MakeHandle(kernelMajor, 0) {
			if err := netlink.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("remove rttlab %s qdisc on %s: %w", q.Type(), link.Attrs().Name, err)
			}
		}
	}
	return nil
}

// netemQdisc builds a netem qdisc with the given delay (1µs resolution), a
// queue long enough for MaxDelay at 100k packets/s, and its queue kept in
// order (netemFIFORate).
func netemQdisc(linkIndex int, parent, handle uint32, delay time.Duration) *netlink.Netem {
	return netlink.NewNetem(
		netlink.QdiscAttrs{LinkIndex: linkIndex, Parent: parent, Handle: handle},
		netlink.NetemQdiscAttrs{Latency: uint32((delay + time.Microsecond/2) / time.Microsecond), Limit: netemLimit, Rate64: netemFIFORate},
	)
}

// kernelPlan returns the qdiscs (in creation order: the root first, then
// the netems) and filters that apply c on the link. Interface scope: netem
// at the root. Path scope: a prio root whose bands 1-3 behave like
// pfifo_fast, one netem under each band from 4 on (one band per distinct
// delay), and one u32 filter per peer that steers packets to that peer
// into its delay's band.
func kernelPlan(linkIndex int, c Config) ([]netlink.Qdisc, []netlink.Filter) {
	root := netlink.MakeHandle(kernelMajor, 0)
	if c.Scope() == "interface" {
		return []netlink.Qdisc{netemQdisc(linkIndex, netlink.HANDLE_ROOT, root, c.Delay)}, nil
	}
	delays := groupDelays(c)
	prio := netlink.NewPrio(netlink.QdiscAttrs{LinkIndex: linkIndex, Parent: netlink.HANDLE_ROOT, Handle: root})
	prio.Bands = uint8(kernelFirstNetemBand - 1 + len(delays))
	qdiscs := []netlink.Qdisc{prio}
	for i, d := range delays {
		band := netlink.MakeHandle(kernelMajor, uint16(kernelFirstNetemBand+i))
		qdiscs = append(qdiscs, netemQdisc(linkIndex, band, netlink.MakeHandle(uint16(kernelNetemMajor+i), 0), d))
	}
	entries := c.Entries()
	filters := make([]netlink.Filter, 0, len(entries))
	for _, e := range entries {
		band := netlink.MakeHandle(kernelMajor, uint16(kernelFirstNetemBand+slices.Index(delays, e.Delay)))
		filters = append(filters, peerFilter(linkIndex, root, band, e.Peer))
	}
	return qdiscs, filters
}

// peerFilter matches the destination address of IPv4 (offset 16) or IPv6
// (offset 24) packets and sends them to class band.
func peerFilter(linkIndex int, parent, band uint32, peer netip.Addr) *netlink.U32 {
	peer = peer.Unmap()
	proto, prio, off := uint16(unix.ETH_P_IP), uint16(1), int32(16)
	if peer.Is6() {
		proto, prio, off = unix.ETH_P_IPV6, 2, 24
	}
	b := peer.AsSlice()
	sel := &nl.TcU32Sel{Flags: nl.TC_U32_TERMINAL}
	for i := 0; i < len(b); i += 4 {
		sel.Keys = append(sel.Keys, nl.TcU32Key{
			Mask: 0xffffffff,
			Val:  binary.BigEndian.Uint32(b[i:]),
			Off:  off + int32(i),
		})
	}
	sel.Nkeys = uint8(len(sel.Keys))
	return &netlink.U32{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: linkIndex, Parent: parent, Priority: prio, Protocol: proto},
		ClassId:     band,
		Sel:         sel,
	}
}

// ProbeKernel adds a netem qdisc to lo in the calling thread's network
// namespace and removes it again; its error carries the kernel's own
// words ("Specified qdisc kind is unknown") where netem is missing.
func ProbeKernel() error {
	nl.EnableErrorMessageReporting = true
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	q := netlink.NewNetem(netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		netlink.NetemQdiscAttrs{Latency: 1000})
	if err := netlink.QdiscAdd(q); err != nil {
		return fmt.Errorf("tc qdisc add dev lo root netem: %w", err)
	}
	return netlink.QdiscDel(q)
}
