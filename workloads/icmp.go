package workloads

import (
	"context"
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

// Ping sends count ICMP echo requests to dst from a raw socket (needs
// CAP_NET_RAW), one at a time, starting one every interval (or as soon as
// the previous reply arrived when that is later). Each round trip is timed
// on the monotonic clock from just before the send to the receipt of the
// matching reply; an echo without a reply within EchoTimeout counts as
// lost. The socket lives in the network namespace of the calling thread.
func Ping(ctx context.Context, dst netip.Addr, count int, interval time.Duration) (PingResult, error) {
	res := PingResult{Dst: dst.String()}
	if err := checkPing(dst, count, interval); err != nil {
		return res, err
	}
	dst = dst.Unmap()
	network, laddr, proto := "ip4:icmp", "0.0.0.0", 1
	var echoType, replyType icmp.Type = ipv4.ICMPTypeEcho, ipv4.ICMPTypeEchoReply
	if dst.Is6() {
		network, laddr, proto = "ip6:ipv6-icmp", "::", 58
		echoType, replyType = ipv6.ICMPTypeEchoRequest, ipv6.ICMPTypeEchoReply
	}
	conn, err := icmp.ListenPacket(network, laddr)
	if err != nil {
		return res, fmt.Errorf("ping %s: open raw ICMP socket (needs CAP_NET_RAW): %w", dst, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Now()) })
	defer stop()

	id := rand.N(1 << 16)
	peer := &net.IPAddr{IP: dst.AsSlice(), Zone: dst.Zone()}
	buf := make([]byte, 1500)
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
		rtt, ok, err := awaitReply(conn, buf, proto, replyType, dst, id, seq, start)
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

// awaitReply reads until the reply to (id, seq) from dst arrives or the read
// deadline passes (ok false).
func awaitReply(conn *icmp.PacketConn, buf []byte, proto int, replyType icmp.Type, dst netip.Addr, id, seq int, start time.Time) (time.Duration, bool, error) {
	for {
		n, from, err := conn.ReadFrom(buf)
		got := time.Now()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return 0, false, nil
			}
			return 0, false, fmt.Errorf("read reply: %w", err)
		}
		m, err := icmp.ParseMessage(proto, buf[:n])
		if err != nil || m.Type != replyType {
			continue
		}
		echo, ok := m.Body.(*icmp.Echo)
		if !ok || echo.ID != id || echo.Seq != seq {
			continue
		}
		if ip, ok := from.(*net.IPAddr); ok {
			if a, ok := netip.AddrFromSlice(ip.IP); ok && a.Unmap() != dst.WithZone("") {
				continue
			}
		}
		return got.Sub(start), true, nil
	}
}

// finish fills in the statistics from the samples.
func (r PingResult) finish() PingResult {
	n := len(r.Samples)
	if n == 0 {
		return r
	}
	s := slices.Clone(r.Samples)
	slices.Sort(s)
	r.Min, r.Max = s[0], s[n-1]
	if n%2 == 1 {
		r.Median = s[n/2]
	} else {
		r.Median = (s[n/2-1] + s[n/2]) / 2
	}
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	r.Mean = sum / time.Duration(n)
	return r
}
