package netem

// A small NFQUEUE client on raw netlink (golang.org/x/sys/unix).
//
// Why not github.com/florianl/go-nfqueue/v2: it owns the socket and runs its
// own read goroutine that calls back per packet, so the shaper cannot wait on
// the socket and on the next due time in one ppoll from a single OS-locked
// thread, nor spin on the socket just before a due time. Those two things
// are what make the delay precise to tens of microseconds instead of the
// ~0.3 ms overshoot of a goroutine-and-timer design. The protocol part we
// need is small: bind a queue with metadata-only copies, read packet ids,
// and send batch verdicts.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// Netlink NFQUEUE protocol constants (include/uapi/linux/netfilter/nfnetlink_queue.h).
const (
	nfqnlMsgPacket       = 0
	nfqnlMsgVerdict      = 1
	nfqnlMsgConfig       = 2
	nfqnlMsgVerdictBatch = 3

	nfqaPacketHdr  = 1
	nfqaVerdictHdr = 2
	nfqaTimestamp  = 4
	nfqaPayload    = 10

	nfqaCfgCmd      = 1
	nfqaCfgParams   = 2
	nfqaCfgQueueMax = 3
	nfqaCfgMask     = 4
	nfqaCfgFlags    = 5

	nfqnlCfgCmdBind   = 1
	nfqnlCfgCmdUnbind = 2

	nfqnlCopyPacket = 2
	// copyRange: enough of each packet for the IPv6 header's addresses
	// (and the IPv4 header's), from which the shaper tells the peer.
	copyRange = 40

	nfqaCfgFGSO = 1 << 2

	nfAccept = 1

	nlaTypeMask = 0x3fff
	nlmsgHdrLen = 16
	nfgenHdrLen = 4
)

// nfqMsgType is the netlink message type of an NFQUEUE message.
func nfqMsgType(msg uint16) uint16 { return unix.NFNL_SUBSYS_QUEUE<<8 | msg }

func nlAlign(n int) int { return (n + 3) &^ 3 }

// nfqMessage builds one netlink message: nlmsghdr, nfgenmsg for queue, and
// the given attributes (type, payload) each padded to 4 bytes.
func nfqMessage(msgType, flags uint16, seq uint32, queue uint16, attrs ...nlAttr) []byte {
	size := nlmsgHdrLen + nfgenHdrLen
	for _, a := range attrs {
		size += nlAlign(4 + len(a.data))
	}
	b := make([]byte, size)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(size))
	ne.PutUint16(b[4:], nfqMsgType(msgType))
	ne.PutUint16(b[6:], flags)
	ne.PutUint32(b[8:], seq)
	ne.PutUint32(b[12:], 0) // to the kernel
	b[16] = unix.AF_UNSPEC
	b[17] = unix.NFNETLINK_V0
	binary.BigEndian.PutUint16(b[18:], queue)
	off := nlmsgHdrLen + nfgenHdrLen
	for _, a := range attrs {
		ne.PutUint16(b[off:], uint16(4+len(a.data)))
		ne.PutUint16(b[off+2:], a.typ)
		copy(b[off+4:], a.data)
		off += nlAlign(4 + len(a.data))
	}
	return b
}

type nlAttr struct {
	typ  uint16
	data []byte
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// configBindMsg binds queue to this socket, asks for the first 40 bytes
// of each packet (its IP addresses), raises the queue length and lets GSO
// packets through unsegmented (the verdict does not need their payload).
func configBindMsg(seq uint32, queue uint16, maxLen uint32) []byte {
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0} // command, pad, pf (be16, unused since 3.8)
	params := append(be32(copyRange), nfqnlCopyPacket)
	return nfqMessage(nfqnlMsgConfig, unix.NLM_F_REQUEST|unix.NLM_F_ACK, seq, queue,
		nlAttr{nfqaCfgCmd, cmd},
		nlAttr{nfqaCfgParams, params},
		nlAttr{nfqaCfgQueueMax, be32(maxLen)},
		nlAttr{nfqaCfgMask, be32(nfqaCfgFGSO)},
		nlAttr{nfqaCfgFlags, be32(nfqaCfgFGSO)},
	)
}

func configUnbindMsg(seq uint32, queue uint16) []byte {
	return nfqMessage(nfqnlMsgConfig, unix.NLM_F_REQUEST|unix.NLM_F_ACK, seq, queue,
		nlAttr{nfqaCfgCmd, []byte{nfqnlCfgCmdUnbind, 0, 0, 0}})
}

// verdictBatchMsg gives verdict to every queued packet with an id up to and
// including id (the kernel compares ids wrap-safely, in queue order).
func verdictBatchMsg(seq uint32, queue uint16, id, verdict uint32) []byte {
	return nfqMessage(nfqnlMsgVerdictBatch, unix.NLM_F_REQUEST, seq, queue,
		nlAttr{nfqaVerdictHdr, append(be32(verdict), be32(id)...)})
}

// appendVerdictMsg appends to b the message that gives verdict to the one
// queued packet id: what nfqMessage builds for NFQNL_MSG_VERDICT with a
// verdict header, without allocating.
func appendVerdictMsg(b []byte, seq uint32, queue uint16, id, verdict uint32) []byte {
	const size = nlmsgHdrLen + nfgenHdrLen + 4 + 8
	ne := binary.NativeEndian
	b = ne.AppendUint32(b, size)
	b = ne.AppendUint16(b, nfqMsgType(nfqnlMsgVerdict))
	b = ne.AppendUint16(b, unix.NLM_F_REQUEST)
	b = ne.AppendUint32(b, seq)
	b = ne.AppendUint32(b, 0)
	b = append(b, unix.AF_UNSPEC, unix.NFNETLINK_V0)
	b = binary.BigEndian.AppendUint16(b, queue)
	b = ne.AppendUint16(b, 4+8)
	b = ne.AppendUint16(b, nfqaVerdictHdr)
	b = binary.BigEndian.AppendUint32(b, verdict)
	return binary.BigEndian.AppendUint32(b, id)
}

// nlError is an NLMSG_ERROR answer from the kernel.
type nlError struct {
	seq   uint32
	errno unix.Errno
}

// pktInfo is what the shaper needs of one queued packet: its id and, when
// the kernel attached one, the time the packet was received (NFQA_TIMESTAMP:
// CLOCK_REALTIME, microsecond resolution; 0 when absent).
type pktInfo struct {
	id       uint32
	rxNs     int64 // kernel receive time, ns since the Unix epoch; 0 = none
	src, dst netip.Addr
}

// parseNfqMessages walks the netlink messages in b, calling onPacket for
// each queued packet and onError for each NLMSG_ERROR (errno 0 for an ack).
func parseNfqMessages(b []byte, onPacket func(pktInfo), onError func(nlError)) error {
	ne := binary.NativeEndian
	for len(b) >= nlmsgHdrLen {
		l := int(ne.Uint32(b[0:]))
		if l < nlmsgHdrLen || l > len(b) {
			return fmt.Errorf("malformed netlink message: length %d of %d bytes", l, len(b))
		}
		typ := ne.Uint16(b[4:])
		seq := ne.Uint32(b[8:])
		body := b[nlmsgHdrLen:l]
		switch {
		case typ == unix.NLMSG_ERROR:
			if len(body) < 4 {
				return fmt.Errorf("short netlink error message")
			}
			code := int32(ne.Uint32(body))
			onError(nlError{seq: seq, errno: unix.Errno(-code)})
		case typ == nfqMsgType(nfqnlMsgPacket):
			p, ok := packetInfo(body)
			if !ok {
				return fmt.Errorf("NFQUEUE packet message without a packet header")
			}
			onPacket(p)
		}
		next := nlAlign(l)
		if next > len(b) {
			break
		}
		b = b[next:]
	}
	return nil
}

// packetInfo reads NFQA_PACKET_HDR (the id) and NFQA_TIMESTAMP (struct
// nfqnl_msg_packet_timestamp: big-endian seconds and microseconds) from a
// packet message body (after nlmsghdr).
func packetInfo(body []byte) (pktInfo, bool) {
	var p pktInfo
	if len(body) < nfgenHdrLen {
		return p, false
	}
	a := body[nfgenHdrLen:]
	ne := binary.NativeEndian
	haveID := false
	for len(a) >= 4 {
		l := int(ne.Uint16(a[0:]))
		t := ne.Uint16(a[2:]) & nlaTypeMask
		if l < 4 || l > len(a) {
			return p, false
		}
		switch {
		case t == nfqaPacketHdr && l >= 4+4:
			p.id, haveID = binary.BigEndian.Uint32(a[4:]), true
		case t == nfqaPayload:
			p.src, p.dst = ipAddrs(a[4:l])
		case t == nfqaTimestamp && l >= 4+16:
			sec := int64(binary.BigEndian.Uint64(a[4:]))
			usec := int64(binary.BigEndian.Uint64(a[12:]))
			if sec > 0 || usec > 0 {
				p.rxNs = sec*1e9 + usec*1e3
			}
		}
		n := nlAlign(l)
		if n > len(a) {
			break
		}
		a = a[n:]
	}
	return p, haveID
}

// ipAddrs reads the source and destination of an IPv4 or IPv6 header;
// zero Addrs when b is too short or not IP.
func ipAddrs(b []byte) (src, dst netip.Addr) {
	if len(b) < 1 {
		return
	}
	switch b[0] >> 4 {
	case 4:
		if len(b) >= 20 {
			src, dst = netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20]))
		}
	case 6:
		if len(b) >= 40 {
			src, dst = netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
		}
	}
	return
}

// nfqSocket is a netlink socket bound to one NFQUEUE queue number.
type nfqSocket struct {
	fd    int
	queue uint16
	seq   uint32
	buf   []byte
	vbuf  []byte // verdictEach's messages, reused
}

// openNFQueue opens a non-blocking netfilter netlink socket in the calling
// thread's network namespace and binds queue to it.
func openNFQueue(queue uint16, maxLen uint32) (*nfqSocket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("open netfilter netlink socket: %w", err)
	}
	s := &nfqSocket{fd: fd, queue: queue, buf: make([]byte, 1<<16)}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		s.Close()
		return nil, fmt.Errorf("bind netfilter netlink socket: %w", err)
	}
	// A large receive buffer absorbs bursts; SO_RCVBUFFORCE needs
	// CAP_NET_ADMIN, which the shaper has anyway.
	const rcvbuf = 16 << 20
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	if err := s.request(configBindMsg(s.nextSeq(), queue, maxLen)); err != nil {
		s.Close()
		switch {
		case errors.Is(err, unix.EPERM):
			return nil, fmt.Errorf("bind NFQUEUE %d: %w: the shaper needs CAP_NET_ADMIN", queue, err)
		case errors.Is(err, unix.EBUSY):
			return nil, fmt.Errorf("bind NFQUEUE %d: %w: another process holds this queue; pick another --queue", queue, err)
		}
		return nil, fmt.Errorf("bind NFQUEUE %d: %w", queue, err)
	}
	return s, nil
}

func (s *nfqSocket) nextSeq() uint32 { s.seq++; return s.seq }

// request sends a message with NLM_F_ACK and waits up to 2s for its ack.
// Packet messages that arrive meanwhile are ignored (a later batch verdict
// covers them, as ids only grow).
func (s *nfqSocket) request(msg []byte) error {
	seq := binary.NativeEndian.Uint32(msg[8:])
	if err := unix.Sendto(s.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("no answer from the kernel within 2s")
		}
		ts := unix.NsecToTimespec(left.Nanoseconds())
		fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
		if _, err := unix.Ppoll(fds, &ts, nil); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("wait for netlink answer: %w", err)
		}
		n, _, err := unix.Recvfrom(s.fd, s.buf, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read netlink answer: %w", err)
		}
		var (
			done   bool
			result error
		)
		perr := parseNfqMessages(s.buf[:n], func(pktInfo) {}, func(e nlError) {
			if e.seq == seq {
				done = true
				if e.errno != 0 {
					result = e.errno
				}
			}
		})
		if perr != nil {
			return perr
		}
		if done {
			return result
		}
	}
}

// drain reads every message now waiting on the socket without blocking,
// calling onPacket for each queued packet. It returns the number of packet
// messages read. Errors the kernel reports for our verdicts go to onError.
func (s *nfqSocket) drain(onPacket func(pktInfo), onError func(nlError)) (int, error) {
	count := 0
	counted := func(p pktInfo) { count++; onPacket(p) }
	for {
		n, _, err := unix.Recvfrom(s.fd, s.buf, unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return count, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOBUFS):
			// The socket overflowed: the kernel dropped packets it could
			// not hand over. Report it and keep going.
			onError(nlError{errno: unix.ENOBUFS})
			continue
		case err != nil:
			return count, fmt.Errorf("read NFQUEUE %d: %w", s.queue, err)
		case n == 0:
			return count, nil
		}
		if err := parseNfqMessages(s.buf[:n], counted, onError); err != nil {
			return count, fmt.Errorf("read NFQUEUE %d: %w", s.queue, err)
		}
	}
}

// verdictBatch accepts (or drops) every held packet with an id up to id.
func (s *nfqSocket) verdictBatch(id, verdict uint32) error {
	return s.send(verdictBatchMsg(s.nextSeq(), s.queue, id, verdict))
}

// verdictEachChunk bounds the verdict messages of one send (32 bytes
// each), well under the socket's send buffer.
const verdictEachChunk = 1024

// verdictEach accepts (or drops) exactly the packets hs, one verdict
// message each, up to verdictEachChunk messages per send.
func (s *nfqSocket) verdictEach(hs []held, verdict uint32) error {
	for len(hs) > 0 {
		n := min(len(hs), verdictEachChunk)
		s.vbuf = s.vbuf[:0]
		for _, h := range hs[:n] {
			s.vbuf = appendVerdictMsg(s.vbuf, s.nextSeq(), s.queue, h.id, verdict)
		}
		if err := s.send(s.vbuf); err != nil {
			return err
		}
		hs = hs[n:]
	}
	return nil
}

func (s *nfqSocket) send(msg []byte) error {
	for {
		err := unix.Sendto(s.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("send verdict to NFQUEUE %d: %w", s.queue, err)
		}
		return nil
	}
}

// Close unbinds the queue (best effort) and closes the socket. Packets
// still held in the kernel for this queue are dropped by the kernel.
func (s *nfqSocket) Close() error {
	if s.fd < 0 {
		return nil
	}
	_ = unix.Sendto(s.fd, configUnbindMsg(s.nextSeq(), s.queue), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}
