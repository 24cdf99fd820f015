package workloads

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// WireCounts are what the wire showed between two snapshots of one
// PostgreSQL connection seen from the app's side.
type WireCounts struct {
	// RoundTrips counts client→database bursts of data answered by the
	// database: each time the client sends after the database spoke (or
	// first), and the database then answers, is one round trip.
	RoundTrips int `json:"round_trips"`
	// Statements counts frontend Query ('Q') and Execute ('E') messages.
	Statements int `json:"statements"`
	// Parses counts frontend Parse ('P') messages (statement preparation).
	Parses        int `json:"parses"`
	ClientPackets int `json:"client_packets"`
	ServerPackets int `json:"server_packets"`
	// Desync counts times the frontend message stream could not be parsed
	// (a capture that started mid-message); its statements are undercounted.
	Desync int `json:"desync,omitempty"`
}

// Sub returns c - o.
func (c WireCounts) Sub(o WireCounts) WireCounts {
	return WireCounts{
		RoundTrips: c.RoundTrips - o.RoundTrips, Statements: c.Statements - o.Statements, Parses: c.Parses - o.Parses,
		ClientPackets: c.ClientPackets - o.ClientPackets, ServerPackets: c.ServerPackets - o.ServerPackets, Desync: c.Desync - o.Desync,
	}
}

// WireCounter watches the TCP traffic between this network namespace and
// a database server on one interface with an AF_PACKET socket (needs
// CAP_NET_RAW) and counts round trips and protocol messages.
type WireCounter struct {
	fd     int
	server netip.AddrPort
	mu     sync.Mutex
	c      WireCounts
	// stream state
	burstOpen bool
	buf       []byte
	nextSeq   map[uint32]uint32 // client seq tracking per client port
	done      chan struct{}
	readErr   error
	closeOnce sync.Once
	// marks: see Mark
	markSent uint64
	markSeen uint64
	markCond *sync.Cond
}

// The marker datagram: sent to the discard port of the database host so
// it crosses the watched interface behind every packet seen before it.
const markPort = 9

var markMagic = []byte("rttlab-trace-mark")

// Mark sends a marker datagram through the interface and waits until the
// capture has seen it: every packet that crossed the interface before the
// call has then been counted. Snapshots taken after Mark are exact.
func (w *WireCounter) Mark(timeout time.Duration) error {
	w.mu.Lock()
	w.markSent++
	n := w.markSent
	w.mu.Unlock()
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(w.server.Addr(), markPort)))
	if err != nil {
		return fmt.Errorf("wire: marker: %w", err)
	}
	defer conn.Close()
	payload := binary.BigEndian.AppendUint64(append([]byte(nil), markMagic...), n)
	if _, err := conn.Write(payload); err != nil {
		return fmt.Errorf("wire: marker: %w", err)
	}
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, w.markCond.Broadcast)
	defer timer.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.markSeen < n {
		if time.Now().After(deadline) || w.readErr != nil {
			return fmt.Errorf("wire: the capture did not see marker %d within %s", n, timeout)
		}
		w.markCond.Wait()
	}
	return nil
}

// OpenWire starts counting traffic to and from server on the interface.
func OpenWire(iface string, server netip.AddrPort) (*WireCounter, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("wire: interface %s: %w", iface, err)
	}
	proto := htons(unix.ETH_P_ALL)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto))
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("wire: packet socket: %w (needs CAP_NET_RAW)", err)
		}
		return nil, fmt.Errorf("wire: packet socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("wire: bind %s: %w", iface, err)
	}
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, err
	}
	w := &WireCounter{fd: fd, server: server, nextSeq: map[uint32]uint32{}, done: make(chan struct{})}
	w.markCond = sync.NewCond(&w.mu)
	go w.loop()
	return w, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Snapshot returns the counts so far.
func (w *WireCounter) Snapshot() WireCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.c
}

// Close stops counting.
func (w *WireCounter) Close() error {
	w.closeOnce.Do(func() { close(w.done) })
	return nil
}

// Err returns the error that stopped the capture, if any.
func (w *WireCounter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.readErr
}

func (w *WireCounter) loop() {
	defer unix.Close(w.fd)
	buf := make([]byte, 65536)
	for {
		select {
		case <-w.done:
			return
		default:
		}
		n, _, err := unix.Recvfrom(w.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			w.mu.Lock()
			w.readErr = err
			w.mu.Unlock()
			return
		}
		w.packet(buf[:n])
	}
}

// packet handles one Ethernet frame.
func (w *WireCounter) packet(f []byte) {
	seg, ok := parseTCP(f)
	if !ok {
		return
	}
	if seg.udp {
		if seg.dst.Addr() == w.server.Addr() && seg.dst.Port() == markPort && bytes.HasPrefix(seg.payload, markMagic) {
			n := binary.BigEndian.Uint64(append(seg.payload[len(markMagic):], make([]byte, 8)...)[:8])
			w.mu.Lock()
			if n > w.markSeen {
				w.markSeen = n
			}
			w.mu.Unlock()
			w.markCond.Broadcast()
		}
		return
	}
	toServer := seg.dst == w.server
	fromServer := seg.src == w.server
	if !toServer && !fromServer {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(seg.payload) == 0 {
		return
	}
	if toServer {
		key := uint32(seg.src.Port())
		if next, seen := w.nextSeq[key]; seen && seqBefore(seg.seq, next) {
			return // retransmission
		}
		w.nextSeq[key] = seg.seq + uint32(len(seg.payload))
		w.c.ClientPackets++
		w.burstOpen = true
		w.frontend(seg.payload)
		return
	}
	w.c.ServerPackets++
	if w.burstOpen {
		w.c.RoundTrips++
		w.burstOpen = false
	}
}

func seqBefore(a, b uint32) bool { return int32(a-b) < 0 }

// frontend parses PostgreSQL frontend messages: a type byte and a 4-byte
// length that includes itself.
func (w *WireCounter) frontend(p []byte) {
	w.buf = append(w.buf, p...)
	for len(w.buf) >= 5 {
		typ := w.buf[0]
		l := int(binary.BigEndian.Uint32(w.buf[1:5]))
		if l < 4 || l > 1<<26 || !isFrontendType(typ) {
			w.c.Desync++
			w.buf = w.buf[:0]
			return
		}
		if len(w.buf) < 1+l {
			return
		}
		switch typ {
		case 'Q', 'E':
			w.c.Statements++
		case 'P':
			w.c.Parses++
		}
		w.buf = w.buf[1+l:]
	}
	if len(w.buf) == 0 {
		w.buf = w.buf[:0:0]
	}
}

func isFrontendType(b byte) bool {
	switch b {
	case 'Q', 'P', 'B', 'E', 'D', 'S', 'H', 'C', 'X', 'F', 'd', 'c', 'f', 'p':
		return true
	}
	return false
}

type tcpSeg struct {
	src, dst netip.AddrPort
	seq      uint32
	payload  []byte
	udp      bool
}

// parseTCP decodes an Ethernet frame carrying IPv4 or IPv6 TCP.
func parseTCP(f []byte) (tcpSeg, bool) {
	var s tcpSeg
	if len(f) < 14 {
		return s, false
	}
	et := binary.BigEndian.Uint16(f[12:14])
	ip := f[14:]
	var tcp []byte
	var srcA, dstA netip.Addr
	switch et {
	case 0x0800:
		if len(ip) < 20 || ip[0]>>4 != 4 {
			return s, false
		}
		ihl := int(ip[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(ip[2:4]))
		if (ip[9] != 6 && ip[9] != 17) || ihl < 20 || total > len(ip) || total < ihl {
			return s, false
		}
		srcA = netip.AddrFrom4([4]byte(ip[12:16]))
		dstA = netip.AddrFrom4([4]byte(ip[16:20]))
		tcp = ip[ihl:total]
		if ip[9] == 17 {
			if len(tcp) < 8 {
				return s, false
			}
			s.udp = true
			s.src = netip.AddrPortFrom(srcA, binary.BigEndian.Uint16(tcp[0:2]))
			s.dst = netip.AddrPortFrom(dstA, binary.BigEndian.Uint16(tcp[2:4]))
			s.payload = tcp[8:]
			return s, true
		}
	case 0x86DD:
		if len(ip) < 40 || ip[6] != 6 {
			return s, false
		}
		plen := int(binary.BigEndian.Uint16(ip[4:6]))
		if 40+plen > len(ip) {
			return s, false
		}
		srcA = netip.AddrFrom16([16]byte(ip[8:24]))
		dstA = netip.AddrFrom16([16]byte(ip[24:40]))
		tcp = ip[40 : 40+plen]
	default:
		return s, false
	}
	if len(tcp) < 20 {
		return s, false
	}
	off := int(tcp[12]>>4) * 4
	if off < 20 || off > len(tcp) {
		return s, false
	}
	s.src = netip.AddrPortFrom(srcA, binary.BigEndian.Uint16(tcp[0:2]))
	s.dst = netip.AddrPortFrom(dstA, binary.BigEndian.Uint16(tcp[2:4]))
	s.seq = binary.BigEndian.Uint32(tcp[4:8])
	s.payload = tcp[off:]
	return s, true
}
