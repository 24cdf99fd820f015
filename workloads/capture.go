package workloads

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// CaptureSnapLen is how much of each packet the capture keeps: the
// Ethernet, IPv4 and transport headers a PacketKey needs, and of a
// request's first segment as far as the load client's SeqHeader (the
// built-in mixes' longest request, with a 7-digit mark, ends it by byte
// 111 of the payload; 256 leaves 190 behind the headers Linux sends). A
// request whose mark lies beyond (a long path, a user's headers) is
// counted unpaired.
const CaptureSnapLen = 256

// CaptureReady starts the line `rttlab agent capture` prints on stderr
// once its socket is bound: packets from then on are captured.
const CaptureReady = "capturing on"

// The capture's ring: the kernel writes packets into blocks shared with
// the reader and wakes it only when a block is full or has waited
// ringBlockTimeout, not once per packet, so a capture running beside a
// measurement costs its CPUs a few wake-ups a second.
const (
	ringBlockSize    = 256 << 10
	ringBlocks       = 32
	ringFrameSize    = 2048 // unused by TPACKET_V3 but checked against the block size
	ringBlockTimeout = 20 * time.Millisecond
)

// CaptureOptions configure OpenCapture.
type CaptureOptions struct {
	Iface string
	// Local is this side's IPv4 address; Peer the other side's and Also
	// further peers: packets between Local and any of them are kept.
	Local, Peer netip.Addr
	Also        []netip.Addr
	// For bounds the capture's duration; MaxPackets the packets kept (the
	// capture stops when it has kept that many).
	For        time.Duration
	MaxPackets int
}

// Capture is what one capture kept: the IPv4 packets between Local and
// its peers (Peer, and Also) that crossed Iface, each with the kernel's
// stamp (CLOCK_REALTIME, so captures in two network namespaces of one
// host share a clock) and its direction.
type Capture struct {
	Iface string       `json:"iface"`
	Local netip.Addr   `json:"local"`
	Peer  netip.Addr   `json:"peer"`
	Also  []netip.Addr `json:"also,omitempty"`
	// StartNs and EndNs bound the time the socket was reading
	// (CLOCK_REALTIME, ns since the epoch).
	StartNs int64 `json:"start_ns"`
	EndNs   int64 `json:"end_ns"`
	// Seen counts the packets of the flows the capture read; Unstamped
	// those without a kernel stamp (not kept); Drops those the kernel
	// could not put in the capture's ring because the reader fell behind
	// (never read): a capture with drops is incomplete.
	Seen      int `json:"seen"`
	Unstamped int `json:"unstamped"`
	Drops     int `json:"drops"`
	// Truncated: the capture kept MaxPackets packets and stopped there.
	MaxPackets int              `json:"max_packets"`
	Truncated  bool             `json:"truncated"`
	Packets    []CapturedPacket `json:"packets"`
}

// Complete says whether the capture kept every packet of its flows
// while it ran: no drop and not truncated.
func (c Capture) Complete() bool { return c.Drops == 0 && !c.Truncated }

// CapturedPacket is one packet of a Capture.
type CapturedPacket struct {
	T   int64     `json:"t"`           // kernel stamp, ns since the epoch
	Out bool      `json:"o,omitempty"` // sent from this side (PACKET_OUTGOING)
	Key PacketKey `json:"k"`
	// Len is the transport payload's length in bytes (TCP: after its
	// header; other protocols: 0).
	Len int `json:"l,omitempty"`
	// Mark is the sequence number plus one that a request's segment
	// carries in its SeqHeader, as far as the capture kept the segment;
	// 0 for every other packet. It is all the capture keeps of a payload.
	Mark int `json:"m,omitempty"`
}

// Capturer is an open AF_PACKET capture; see OpenCapture.
type Capturer struct {
	fd    int
	ring  []byte
	o     CaptureOptions
	block int // the next block to read
	res   Capture
}

// OpenCapture opens a packet socket (needs CAP_NET_RAW) on the interface
// in the calling thread's network namespace, with a kernel filter that
// passes only IPv4 packets between Local and its peers, cut to
// CaptureSnapLen, into a ring of blocks shared with the reader, with
// kernel stamps (SO_TIMESTAMPNS). Packets are captured from the return
// on; Run reads them.
func OpenCapture(o CaptureOptions) (*Capturer, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	ifi, err := interfaceByName(o.Iface)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	// Protocol 0 receives nothing until bind, so no packet of another
	// interface or flow slips in before the filter is attached.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("capture: packet socket: %w (needs CAP_NET_RAW)", err)
		}
		return nil, fmt.Errorf("capture: packet socket: %w", err)
	}
	c := &Capturer{fd: fd, o: o}
	if err := c.setup(ifi.Index); err != nil {
		c.Close()
		return nil, fmt.Errorf("capture on %s: %w", o.Iface, err)
	}
	c.res = Capture{Iface: o.Iface, Local: o.Local, Peer: o.Peer, Also: o.Also, MaxPackets: o.MaxPackets, StartNs: time.Now().UnixNano(), Packets: []CapturedPacket{}}
	return c, nil
}

func (o *CaptureOptions) validate() error {
	o.Local, o.Peer = o.Local.Unmap(), o.Peer.Unmap()
	if !o.Local.Is4() || !o.Peer.Is4() {
		return fmt.Errorf("capture: %s and %s: both addresses must be IPv4", o.Local, o.Peer)
	}
	for i, a := range o.Also {
		if o.Also[i] = a.Unmap(); !o.Also[i].Is4() {
			return fmt.Errorf("capture: peer %s: addresses must be IPv4", a)
		}
	}
	if o.For <= 0 || o.MaxPackets <= 0 {
		return fmt.Errorf("capture: duration %s and packet cap %d must be positive", o.For, o.MaxPackets)
	}
	return nil
}

// peers is every peer of the capture: Peer, then Also.
func (o *CaptureOptions) peers() []netip.Addr { return append([]netip.Addr{o.Peer}, o.Also...) }

// setup attaches the filter, turns on stamps, maps the ring and binds.
func (c *Capturer) setup(ifindex int) error {
	fd := c.fd
	prog, err := bpf.Assemble(flowFilter(c.o.Local, c.o.peers()))
	if err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, r := range prog {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog); err != nil {
		return fmt.Errorf("attach filter: %w", err)
	}
	// The stamps: with SO_TIMESTAMPNS on, the kernel stamps every packet
	// where the capture taps it (CLOCK_REALTIME), received or sent.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fmt.Errorf("kernel stamps: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("ring version: %w", err)
	}
	req := unix.TpacketReq3{Block_size: ringBlockSize, Block_nr: ringBlocks, Frame_size: ringFrameSize,
		Frame_nr: ringBlockSize / ringFrameSize * ringBlocks, Retire_blk_tov: uint32(ringBlockTimeout.Milliseconds())}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("ring: %w", err)
	}
	if c.ring, err = unix.Mmap(fd, 0, ringBlockSize*ringBlocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return fmt.Errorf("map the ring: %w", err)
	}
	proto := htons(unix.ETH_P_ALL)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifindex}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

// flowFilter is a classic BPF program that keeps IPv4 frames between
// local and any of peers (either direction), cut to CaptureSnapLen, and
// drops the rest.
func flowFilter(local netip.Addr, peers []netip.Addr) []bpf.Instruction {
	u32 := func(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }
	n := len(peers)
	// Layout: 0 EtherType; 1 not IPv4: drop; 2 load source; 3 from local:
	// to the destination check; then n "from peer p" checks; a drop;
	// the destination check (load, n "to peer" checks, a drop); the
	// check that a packet from a peer goes to local (load, compare);
	// keep; drop.
	dstCheck := 4 + n + 1 // index of "load destination" for a packet from local
	toLocal := dstCheck + 1 + n + 1
	keep := toLocal + 2
	drop := keep + 1
	skip := func(from, to int) uint8 { return uint8(to - from - 1) }
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 12, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0x0800, SkipTrue: skip(1, drop)},
		bpf.LoadAbsolute{Off: 26, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: u32(local), SkipTrue: skip(3, dstCheck)},
	}
	for i, p := range peers {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: u32(p), SkipTrue: skip(4+i, toLocal)})
	}
	prog = append(prog, bpf.RetConstant{Val: 0}, bpf.LoadAbsolute{Off: 30, Size: 4})
	for i, p := range peers {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: u32(p), SkipTrue: skip(dstCheck+1+i, keep)})
	}
	prog = append(prog, bpf.RetConstant{Val: 0},
		bpf.LoadAbsolute{Off: 30, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: u32(local), SkipFalse: 1},
		bpf.RetConstant{Val: CaptureSnapLen},
		bpf.RetConstant{Val: 0})
	return prog
}

// Run reads packets until ctx ends, the duration passes or the cap is
// reached, then closes the socket and returns what it kept. Packets
// captured before ctx ended are still read: the ring's last block is
// handed over within ringBlockTimeout.
func (c *Capturer) Run(ctx context.Context) (Capture, error) {
	defer c.Close()
	deadline := time.Now().Add(c.o.For)
	for ctx.Err() == nil && time.Now().Before(deadline) && !c.res.Truncated {
		if err := c.readBlocks(100 * time.Millisecond); err != nil {
			return c.finish(), fmt.Errorf("capture on %s: read: %w", c.o.Iface, err)
		}
	}
	c.res.EndNs = time.Now().UnixNano()
	// Drain: every block holding a packet from before the end is handed
	// over within ringBlockTimeout of it.
	for until := time.Now().Add(3 * ringBlockTimeout); !c.res.Truncated && time.Now().Before(until); {
		if err := c.readBlocks(ringBlockTimeout); err != nil {
			break
		}
	}
	if c.res.Truncated {
		// What came after the last kept packet was not kept: the
		// capture's window ends there.
		c.res.EndNs = c.res.Packets[len(c.res.Packets)-1].T
	}
	return c.finish(), nil
}

// The fields of a block and of a packet in the ring (linux/if_packet.h).
const (
	blockStatusOff = 8 // tpacket_block_desc.hdr.bh1.block_status
	blockPktsOff   = 12
	blockFirstOff  = 16
	tpHdrLen       = 48 // TPACKET_ALIGN(sizeof(struct tpacket3_hdr))
)

// readBlocks waits up to wait for the next block, then reads every block
// the kernel has handed over, giving each back.
func (c *Capturer) readBlocks(wait time.Duration) error {
	if !c.blockReady() {
		fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN | unix.POLLERR}}
		if _, err := unix.Poll(fds, int(wait.Milliseconds())); err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
	}
	for c.blockReady() && !c.res.Truncated {
		b := c.ring[c.block*ringBlockSize : (c.block+1)*ringBlockSize]
		n := int(binary.NativeEndian.Uint32(b[blockPktsOff:]))
		off := int(binary.NativeEndian.Uint32(b[blockFirstOff:]))
		for i := 0; i < n && off+tpHdrLen <= len(b); i++ {
			next := c.packet(b[off:])
			if next == 0 {
				break
			}
			off += next
		}
		c.blockStatus().Store(unix.TP_STATUS_KERNEL)
		c.block = (c.block + 1) % ringBlocks
	}
	return nil
}

// blockStatus is the status word of the current block, shared with the
// kernel.
func (c *Capturer) blockStatus() *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&c.ring[c.block*ringBlockSize+blockStatusOff]))
}

func (c *Capturer) blockReady() bool { return c.blockStatus().Load()&unix.TP_STATUS_USER != 0 }

// packet reads one tpacket3_hdr and its frame and keeps the packet when
// it belongs to the flows; it returns the offset of the next header.
func (c *Capturer) packet(h []byte) int {
	next := int(binary.NativeEndian.Uint32(h[0:]))
	sec, nsec := binary.NativeEndian.Uint32(h[4:]), binary.NativeEndian.Uint32(h[8:])
	snap, wire := int(binary.NativeEndian.Uint32(h[12:])), int(binary.NativeEndian.Uint32(h[16:]))
	mac := int(binary.NativeEndian.Uint16(h[24:]))
	if mac+snap > len(h) || tpHdrLen+12 > len(h) {
		return next
	}
	// The sockaddr_ll follows the header: sll_pkttype is its 11th byte.
	outgoing := h[tpHdrLen+10] == unix.PACKET_OUTGOING
	k, plen, ok := keyOfFrame(h[mac:mac+snap], wire)
	if !ok || !c.inFlow(k) {
		return next
	}
	c.res.Seen++
	t := int64(sec)*1e9 + int64(nsec)
	if t == 0 {
		c.res.Unstamped++
		return next
	}
	if c.res.Truncated {
		return next
	}
	mark := 0
	if plen > 0 {
		mark = seqMark(tcpPayload(h[mac : mac+snap]))
	}
	c.res.Packets = append(c.res.Packets, CapturedPacket{T: t, Out: outgoing, Key: k, Len: plen, Mark: mark})
	c.res.Truncated = len(c.res.Packets) >= c.o.MaxPackets
	return next
}

func (c *Capturer) inFlow(k PacketKey) bool {
	s, d := k.Src(), k.Dst()
	for _, p := range c.o.peers() {
		if (s == c.o.Local && d == p) || (s == p && d == c.o.Local) {
			return true
		}
	}
	return false
}

// finish reads the socket's drop counter into the result.
func (c *Capturer) finish() Capture {
	if st, err := unix.GetsockoptTpacketStatsV3(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
		c.res.Drops = int(st.Drops)
	}
	if c.res.EndNs == 0 {
		c.res.EndNs = time.Now().UnixNano()
	}
	return c.res
}

// Close unmaps the ring and closes the socket (Run does it itself).
func (c *Capturer) Close() error {
	if c.ring != nil {
		_ = unix.Munmap(c.ring)
		c.ring = nil
	}
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

// InterfaceIPv4 returns the first IPv4 address of an interface.
func InterfaceIPv4(name string) (netip.Addr, error) {
	ifi, err := interfaceByName(name)
	if err != nil {
		return netip.Addr{}, err
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("interface %s: addresses: %w", name, err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			return p.Addr(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no IPv4 address", name)
}

// interfaceByName finds an interface of this network namespace, naming
// the ones it has when there is no such interface.
func interfaceByName(name string) (*net.Interface, error) {
	ifi, err := net.InterfaceByName(name)
	if err == nil {
		return ifi, nil
	}
	all, lerr := net.Interfaces()
	if lerr != nil {
		return nil, fmt.Errorf("interface %s: %w", name, err)
	}
	var names []string
	for _, i := range all {
		names = append(names, i.Name)
	}
	return nil, fmt.Errorf("no interface %q in this network namespace (it has %s)", name, strings.Join(names, ", "))
}
