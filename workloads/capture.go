package workloads

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// CaptureSnapLen is how much of each packet the capture keeps: the
// Ethernet, IPv4 and transport headers a PacketKey needs.
const CaptureSnapLen = 128

// CaptureReady starts the line `rttlab agent capture` prints on stderr
// once its socket is bound: packets from then on are captured.
const CaptureReady = "capturing on"

// CaptureOptions configure OpenCapture.
type CaptureOptions struct {
	Iface       string
	Local, Peer netip.Addr // IPv4: packets between the two are kept
	// For bounds the capture's duration; MaxPackets the packets kept (the
	// capture stops when it has kept that many).
	For        time.Duration
	MaxPackets int
}

// Capture is what one capture kept: the IPv4 packets between Local and
// Peer that crossed Iface, each with the kernel's receive stamp
// (CLOCK_REALTIME, so captures in two network namespaces of one host
// share a clock) and its direction.
type Capture struct {
	Iface string     `json:"iface"`
	Local netip.Addr `json:"local"`
	Peer  netip.Addr `json:"peer"`
	// StartNs and EndNs bound the time the socket was reading
	// (CLOCK_REALTIME, ns since the epoch).
	StartNs int64 `json:"start_ns"`
	EndNs   int64 `json:"end_ns"`
	// Seen counts the packets of the two addresses the socket read;
	// Unstamped those without a kernel stamp (not kept); Drops those the
	// kernel dropped on the socket (never read).
	Seen      int `json:"seen"`
	Unstamped int `json:"unstamped"`
	Drops     int `json:"drops"`
	// Truncated: the capture kept MaxPackets packets and stopped there.
	MaxPackets int              `json:"max_packets"`
	Truncated  bool             `json:"truncated"`
	Packets    []CapturedPacket `json:"packets"`
}

// CapturedPacket is one packet of a Capture.
type CapturedPacket struct {
	T   int64     `json:"t"`           // kernel stamp, ns since the epoch
	Out bool      `json:"o,omitempty"` // sent from this side (PACKET_OUTGOING)
	Key PacketKey `json:"k"`
}

// Capturer is an open AF_PACKET capture; see OpenCapture.
type Capturer struct {
	fd  int
	o   CaptureOptions
	res Capture
}

// OpenCapture opens a packet socket (needs CAP_NET_RAW) on the interface
// in the calling thread's network namespace, with a kernel filter that
// passes only IPv4 packets between the two addresses, cut to
// CaptureSnapLen, and kernel receive stamps (SO_TIMESTAMPNS). Packets are
// captured from the return on; Run reads them.
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
	if err := setupCaptureSocket(fd, o, ifi.Index); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("capture on %s: %w", o.Iface, err)
	}
	c := &Capturer{fd: fd, o: o}
	c.res = Capture{Iface: o.Iface, Local: o.Local, Peer: o.Peer, MaxPackets: o.MaxPackets, StartNs: time.Now().UnixNano(), Packets: []CapturedPacket{}}
	return c, nil
}

func (o *CaptureOptions) validate() error {
	o.Local, o.Peer = o.Local.Unmap(), o.Peer.Unmap()
	if !o.Local.Is4() || !o.Peer.Is4() {
		return fmt.Errorf("capture: %s and %s: both addresses must be IPv4", o.Local, o.Peer)
	}
	if o.For <= 0 || o.MaxPackets <= 0 {
		return fmt.Errorf("capture: duration %s and packet cap %d must be positive", o.For, o.MaxPackets)
	}
	return nil
}

// setupCaptureSocket attaches the filter, turns on stamps, enlarges the
// receive buffer, sets a read timeout (so Run sees a stop) and binds.
func setupCaptureSocket(fd int, o CaptureOptions, ifindex int) error {
	prog, err := bpf.Assemble(flowFilter(o.Local, o.Peer))
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
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fmt.Errorf("kernel stamps: %w", err)
	}
	const rcvbuf = 8 << 20
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf) // capped by rmem_max
	}
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("read timeout: %w", err)
	}
	proto := htons(unix.ETH_P_ALL)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifindex}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

// flowFilter is a classic BPF program that keeps IPv4 frames between a
// and b (either direction), cut to CaptureSnapLen, and drops the rest.
func flowFilter(a, b netip.Addr) []bpf.Instruction {
	a4, b4 := a.As4(), b.As4()
	av, bv := uint32(a4[0])<<24|uint32(a4[1])<<16|uint32(a4[2])<<8|uint32(a4[3]), uint32(b4[0])<<24|uint32(b4[1])<<16|uint32(b4[2])<<8|uint32(b4[3])
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: 12, Size: 2},                                  // 0 EtherType
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0x0800, SkipTrue: 8},        // 1 not IPv4: drop
		bpf.LoadAbsolute{Off: 26, Size: 4},                                  // 2 source
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: av, SkipTrue: 1},               // 3 from a: 5
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: bv, SkipTrue: 2, SkipFalse: 5}, // 4 from b: 7; else drop
		bpf.LoadAbsolute{Off: 30, Size: 4},                                  // 5 destination
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: bv, SkipTrue: 2, SkipFalse: 3}, // 6 to b: keep
		bpf.LoadAbsolute{Off: 30, Size: 4},                                  // 7 destination
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: av, SkipTrue: 0, SkipFalse: 1}, // 8 to a: keep
		bpf.RetConstant{Val: CaptureSnapLen},                                // 9 keep
		bpf.RetConstant{Val: 0},                                             // 10 drop
	}
}

// Run reads packets until ctx ends, the duration passes or the cap is
// reached, then closes the socket and returns what it kept. Packets
// already queued on the socket when ctx ends are still read.
func (c *Capturer) Run(ctx context.Context) (Capture, error) {
	defer c.Close()
	deadline := time.Now().Add(c.o.For)
	buf := make([]byte, CaptureSnapLen)
	oob := make([]byte, 64)
	for ctx.Err() == nil && time.Now().Before(deadline) && !c.res.Truncated {
		if err := c.readOne(buf, oob, 0); err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return c.finish(), fmt.Errorf("capture on %s: read: %w", c.o.Iface, err)
		}
	}
	c.res.EndNs = time.Now().UnixNano()
	for !c.res.Truncated { // drain what was queued before the end
		if err := c.readOne(buf, oob, unix.MSG_DONTWAIT); err != nil {
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

// readOne reads one packet and keeps it when it belongs to the flow.
func (c *Capturer) readOne(buf, oob []byte, flags int) error {
	n, oobn, _, from, err := unix.Recvmsg(c.fd, buf, oob, flags)
	if err != nil {
		return err
	}
	ll, _ := from.(*unix.SockaddrLinklayer)
	k, ok := keyOfFrame(buf[:n])
	if !ok || ll == nil || !c.inFlow(k) {
		return nil
	}
	c.res.Seen++
	t, ok := stampOf(oob[:oobn])
	if !ok {
		c.res.Unstamped++
		return nil
	}
	if c.res.Truncated {
		return nil
	}
	c.res.Packets = append(c.res.Packets, CapturedPacket{T: t, Out: ll.Pkttype == unix.PACKET_OUTGOING, Key: k})
	c.res.Truncated = len(c.res.Packets) >= c.o.MaxPackets
	return nil
}

func (c *Capturer) inFlow(k PacketKey) bool {
	s, d := k.Src(), k.Dst()
	return (s == c.o.Local && d == c.o.Peer) || (s == c.o.Peer && d == c.o.Local)
}

// stampOf returns the SCM_TIMESTAMPNS stamp of a packet, ns since the
// epoch.
func stampOf(oob []byte) (int64, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			// struct timespec of a 64-bit kernel: seconds, nanoseconds.
			sec, nsec := int64(binary.NativeEndian.Uint64(m.Data[0:8])), int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			if sec == 0 && nsec == 0 {
				return 0, false
			}
			return sec*1e9 + nsec, true
		}
	}
	return 0, false
}

// finish reads the socket's drop counter into the result.
func (c *Capturer) finish() Capture {
	if st, err := unix.GetsockoptTpacketStats(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
		c.res.Drops = int(st.Drops)
	}
	if c.res.EndNs == 0 {
		c.res.EndNs = time.Now().UnixNano()
	}
	return c.res
}

// Close closes the socket (Run does it itself).
func (c *Capturer) Close() error {
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
