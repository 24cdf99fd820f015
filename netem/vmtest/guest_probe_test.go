package vmtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// samples are round trips of one probe, with the probes that got no
// answer.
type samples struct {
	RTT  []time.Duration
	Lost int
}

func (s samples) min() time.Duration {
	if len(s.RTT) == 0 {
		return 0
	}
	return slices.Min(s.RTT)
}

func (s samples) median() time.Duration {
	if len(s.RTT) == 0 {
		return 0
	}
	v := slices.Clone(s.RTT)
	slices.Sort(v)
	return v[len(v)/2]
}

func (s samples) String() string {
	return fmt.Sprintf("min %v median %v of %d, lost %d", ms(s.min()), ms(s.median()), len(s.RTT), s.Lost)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }

// echoTimeout is how long a probe waits for one answer.
const echoTimeout = time.Second

// pingStamped sends count ICMP echoes from namespace ns (from src when
// valid) to dst, one after the other, on a raw socket with SO_TIMESTAMPNS:
// each round trip runs from the clock read just before the send to the
// kernel's receive stamp of the reply.
func pingStamped(ns string, src, dst netip.Addr, count int) (samples, error) {
	var res samples
	err := inNS(ns, func() error {
		fam, proto, reqType, replyType := unix.AF_INET, unix.IPPROTO_ICMP, icmp.Type(ipv4.ICMPTypeEcho), icmp.Type(ipv4.ICMPTypeEchoReply)
		if dst.Is6() {
			fam, proto, reqType, replyType = unix.AF_INET6, unix.IPPROTO_ICMPV6, ipv6.ICMPTypeEchoRequest, ipv6.ICMPTypeEchoReply
		}
		fd, err := unix.Socket(fam, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return fmt.Errorf("raw ICMP socket: %w", err)
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
		}
		if src.IsValid() {
			if err := unix.Bind(fd, sockaddr(src, 0)); err != nil {
				return fmt.Errorf("bind %s: %w", src, err)
			}
		}
		id := rand.N(1 << 16)
		for seq := range count {
			msg, err := (&icmp.Message{Type: reqType, Body: &icmp.Echo{ID: id, Seq: seq, Data: make([]byte, 56)}}).Marshal(nil)
			if err != nil {
				return fmt.Errorf("build echo: %w", err)
			}
			var t0 unix.Timespec
			_ = unix.ClockGettime(unix.CLOCK_REALTIME, &t0)
			if err := unix.Sendto(fd, msg, 0, sockaddr(dst, 0)); err != nil {
				return fmt.Errorf("send echo to %s: %w", dst, err)
			}
			stamp, ok, err := awaitEcho(fd, dst, replyType, id, seq)
			if err != nil {
				return err
			}
			if !ok {
				res.Lost++
				continue
			}
			res.RTT = append(res.RTT, time.Duration(stamp.Nano()-t0.Nano()))
		}
		return nil
	})
	return res, err
}

// awaitEcho reads the socket until the reply (id, seq) from dst arrives
// (its kernel receive stamp) or echoTimeout passes (ok false).
func awaitEcho(fd int, dst netip.Addr, replyType icmp.Type, id, seq int) (unix.Timespec, bool, error) {
	deadline := time.Now().Add(echoTimeout)
	buf := make([]byte, 2048)
	oob := make([]byte, 256)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return unix.Timespec{}, false, nil
		}
		tv := unix.NsecToTimeval(int64(left))
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return unix.Timespec{}, false, fmt.Errorf("SO_RCVTIMEO: %w", err)
		}
		n, oobn, _, from, err := unix.Recvmsg(fd, buf, oob, 0)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return unix.Timespec{}, false, nil
		case err != nil:
			return unix.Timespec{}, false, fmt.Errorf("read echo reply: %w", err)
		}
		if fromAddr(from) != dst {
			continue
		}
		body := buf[:n]
		proto := 58
		if dst.Is4() {
			// A raw IPv4 socket reads the IP header too.
			if len(body) < 20 || len(body) < int(body[0]&0x0f)*4 {
				continue
			}
			body, proto = body[int(body[0]&0x0f)*4:], 1
		}
		m, err := icmp.ParseMessage(proto, body)
		if err != nil || m.Type != replyType {
			continue
		}
		if e, ok := m.Body.(*icmp.Echo); !ok || e.ID != id || e.Seq != seq {
			continue
		}
		stamp, ok := rxStamp(oob[:oobn])
		if !ok {
			return unix.Timespec{}, false, errors.New("echo reply without a kernel receive stamp")
		}
		return stamp, true, nil
	}
}

// rxStamp finds the SCM_TIMESTAMPNS control message.
func rxStamp(oob []byte) (unix.Timespec, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return unix.Timespec{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			return unix.Timespec{
				Sec:  int64(binary.NativeEndian.Uint64(m.Data[0:])),
				Nsec: int64(binary.NativeEndian.Uint64(m.Data[8:])),
			}, true
		}
	}
	return unix.Timespec{}, false
}

func sockaddr(a netip.Addr, port int) unix.Sockaddr {
	if a.Is4() {
		return &unix.SockaddrInet4{Addr: a.As4(), Port: port}
	}
	return &unix.SockaddrInet6{Addr: a.As16(), Port: port}
}

func fromAddr(sa unix.Sockaddr) netip.Addr {
	switch s := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrFrom4(s.Addr)
	case *unix.SockaddrInet6:
		return netip.AddrFrom16(s.Addr).Unmap()
	}
	return netip.Addr{}
}
