package workloads

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// EchoTimeout is how long Ping waits for each echo reply before counting
// the echo as lost. It covers the largest shaped round trip (2 x 1s).
const EchoTimeout = 2500 * time.Millisecond

// PingResult holds the round trips of one Ping call. The statistics cover
// the echoes that got a reply; Lost counts the others.
type PingResult struct {
	Dst      string          `json:"dst"`
	Sent     int             `json:"sent"`
	Received int             `json:"received"`
	Lost     int             `json:"lost"`
	Median   time.Duration   `json:"median_ns"`
	Mean     time.Duration   `json:"mean_ns"`
	Min      time.Duration   `json:"min_ns"`
	Max      time.Duration   `json:"max_ns"`
	Samples  []time.Duration `json:"samples_ns"`
}

// PingTiming says where a round trip of Ping ends.
type PingTiming int

const (
	// PingOnWire ends it at the reply's kernel receive stamp, as iputils
	// ping does: what the wire carried, without the pinger's own wake-up.
	PingOnWire PingTiming = iota
	// PingInProcess ends it when the pinger has read the reply: what a
	// hold after the kernel's receive stamp (the userspace shaper's
	// ingress hook) adds shows only there.
	PingInProcess
)

// Ping is PingTimed on the wire.
func Ping(ctx context.Context, dst netip.Addr, count int, interval time.Duration) (PingResult, error) {
	return PingTimed(ctx, dst, count, interval, PingOnWire)
}

// PingTimed sends count ICMP echo requests to dst from a raw socket (needs
// CAP_NET_RAW), one at a time, starting one every interval (or as soon as
// the previous reply arrived when that is later). Each round trip is timed
// as iputils ping times it: from just before the send (CLOCK_REALTIME) to
// the kernel's receive stamp of the matching reply (SO_TIMESTAMPNS), so
// the time the pinger takes to wake up and read the reply is not in it
// (that time grows with how long the pinger slept, which would make the
// added RTT of a longer delay look larger than it is); with
// PingInProcess, to the read of the reply. An echo without a reply within
// EchoTimeout counts as lost. The socket lives in the network namespace
// of the calling thread.
func PingTimed(ctx context.Context, dst netip.Addr, count int, interval time.Duration, timing PingTiming) (PingResult, error) {
	res := PingResult{Dst: dst.String()}
	if err := checkPing(dst, count, interval); err != nil {
		return res, err
	}
	dst = dst.Unmap()
	network, proto := "ip4:icmp", 1
	var echoType, replyType icmp.Type = ipv4.ICMPTypeEcho, ipv4.ICMPTypeEchoReply
	if dst.Is6() {
		network, proto = "ip6:ipv6-icmp", 58
		echoType, replyType = ipv6.ICMPTypeEchoRequest, ipv6.ICMPTypeEchoReply
	}
	conn, err := net.ListenIP(network, nil)
	if err != nil {
		return res, fmt.Errorf("ping %s: open raw ICMP socket (needs CAP_NET_RAW): %w", dst, err)
	}
	defer conn.Close()
	if err := stampReplies(conn); err != nil {
		return res, fmt.Errorf("ping %s: %w", dst, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Now()) })
	defer stop()

	id := rand.N(1 << 16)
	peer := &net.IPAddr{IP: dst.AsSlice(), Zone: dst.Zone()}
	er := &echoReader{conn: conn, buf: make([]byte, 1500), oob: make([]byte, 128), proto: proto, replyType: replyType, dst: dst, id: id, timing: timing}
	payload := make([]byte, 56)
	next := time.Now()
	for seq := range count {
		if err := sleepUntil(ctx, next); err != nil {
			return res.finish(), fmt.Errorf("ping %s: %w", dst, err)
		}
		next = time.Now().Add(interval)
		msg, err := (&icmp.Message{Type: echoType, Body: &icmp.Echo{ID: id, Seq: seq, Data: payload}}).Marshal(nil)
		if err != nil {
			return res.finish(), fmt.Errorf("ping %s: build echo: %w", dst, err)
		}
		start := time.Now()
		if err := conn.SetReadDeadline(start.Add(EchoTimeout)); err != nil {
			return res.finish(), fmt.Errorf("ping %s: %w", dst, err)
		}
		if _, err := conn.WriteTo(msg, peer); err != nil {
			if ctx.Err() != nil {
				return res.finish(), fmt.Errorf("ping %s: %w", dst, ctx.Err())
			}
			// A send error (e.g. EPERM from a firewall or no route)
			// counts as a lost echo, as ping does.
			res.Sent++
			res.Lost++
			continue
		}
		res.Sent++
		rtt, ok, err := er.await(seq, start)
		if err != nil {
			return res.finish(), fmt.Errorf("ping %s: %w", dst, err)
		}
		if ctx.Err() != nil {
			return res.finish(), fmt.Errorf("ping %s: %w", dst, ctx.Err())
		}
		res.add(rtt, ok)
	}
	return res.finish(), nil
}

// checkPing checks Ping's count and interval for an echo to dst.
func checkPing(dst netip.Addr, count int, interval time.Duration) error {
	if count <= 0 {
		return fmt.Errorf("ping %s: count %d must be positive", dst, count)
	}
	if interval < 0 {
		return fmt.Errorf("ping %s: interval %v must not be negative", dst, interval)
	}
	return nil
}

// sleepUntil waits until t, or until ctx ends, and returns ctx's error.
func sleepUntil(ctx context.Context, t time.Time) error {
	if wait := time.Until(t); wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-timer.C:
		}
	}
	return ctx.Err()
}

// add counts one echo sent: a reply with round trip rtt when ok, else a
// loss.
func (r *PingResult) add(rtt time.Duration, ok bool) {
	if !ok {
		r.Lost++
		return
	}
	r.Received++
	r.Samples = append(r.Samples, rtt)
}

// stampReplies asks the kernel to stamp every packet the socket receives
// (SO_TIMESTAMPNS, CLOCK_REALTIME).
func stampReplies(conn *net.IPConn) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) }); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("kernel receive stamps: %w", serr)
	}
	return nil
}

// echoReader reads the replies to one ping's echoes (identifier id,
// from dst) on conn, timed as timing says.
type echoReader struct {
	conn      *net.IPConn
	buf, oob  []byte
	proto     int
	replyType icmp.Type
	dst       netip.Addr
	id        int
	timing    PingTiming
}

// await reads until the reply to echo seq, sent at start, arrives or the
// read deadline passes (ok false). On the wire the round trip ends at the
// reply's kernel receive stamp (at the read, should the kernel give
// none); in process at the read.
func (r *echoReader) await(seq int, start time.Time) (time.Duration, bool, error) {
	conn, buf, oob, proto, replyType, dst, id, timing := r.conn, r.buf, r.oob, r.proto, r.replyType, r.dst, r.id, r.timing
	for {
		n, oobn, _, from, err := conn.ReadMsgIP(buf, oob)
		got := time.Now()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return 0, false, nil
			}
			return 0, false, fmt.Errorf("read reply: %w", err)
		}
		body := buf[:n]
		if proto == 1 && n >= 20 && body[0]>>4 == 4 {
			body = body[min(int(body[0]&0x0f)*4, n):] // a raw IPv4 socket reads the IP header too
		}
		m, err := icmp.ParseMessage(proto, body)
		if err != nil || m.Type != replyType {
			continue
		}
		echo, ok := m.Body.(*icmp.Echo)
		if !ok || echo.ID != id || echo.Seq != seq {
			continue
		}
		if from != nil {
			if a, ok := netip.AddrFromSlice(from.IP); ok && a.Unmap() != dst.WithZone("") {
				continue
			}
		}
		if t, ok := stampOf(oob[:oobn]); ok && timing == PingOnWire {
			got = time.Unix(0, t)
			return got.Sub(start.Round(0)), true, nil
		}
		return got.Sub(start), true, nil
	}
}

// finish fills in the statistics from the samples.
func (r PingResult) finish() PingResult {
	if len(r.Samples) == 0 {
		return r
	}
	r.Median, r.Mean, r.Min, r.Max = durationStats(r.Samples)
	return r
}

// durationStats is the median, mean, minimum and maximum of samples (at
// least one), which it leaves in their order.
func durationStats(samples []time.Duration) (median, mean, lo, hi time.Duration) {
	n := len(samples)
	s := slices.Clone(samples)
	slices.Sort(s)
	if n%2 == 1 {
		median = s[n/2]
	} else {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	return median, sum / time.Duration(n), s[0], s[n-1]
}

// stampOf returns the SCM_TIMESTAMPNS stamp of a received packet, ns
// since the epoch.
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
