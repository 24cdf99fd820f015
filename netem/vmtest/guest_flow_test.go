package vmtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Echo servers that every namespace runs for the TCP and UDP probes.
const (
	tcpEchoPort = 7000
	udpEchoPort = 7001
	recordSize  = 64 // bytes of one numbered record (TCP) or datagram (UDP)
)

// startEchoServers starts a TCP and a UDP echo server on all of the
// namespace's addresses; they run until the VM powers off.
func startEchoServers(ns string) error {
	return inNS(ns, func() error {
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", tcpEchoPort))
		if err != nil {
			return fmt.Errorf("TCP echo server: %w", err)
		}
		pc, err := net.ListenPacket("udp", fmt.Sprintf(":%d", udpEchoPort))
		if err != nil {
			return fmt.Errorf("UDP echo server: %w", err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = io.Copy(c, c); c.Close() }()
			}
		}()
		go func() {
			buf := make([]byte, 2048)
			for {
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				_, _ = pc.WriteTo(buf[:n], from)
			}
		}()
		return nil
	})
}

// tcpRequests opens a TCP connection from ns (from src) to dst's echo
// server and makes n request/response exchanges of one numbered record
// each, timing each on the monotonic clock. A record that comes back with
// another number is an error: order within the stream was not kept.
func tcpRequests(ns string, src, dst netip.Addr, n int) (samples, error) {
	var res samples
	var conn net.Conn
	err := inNS(ns, func() error {
		d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
		var err error
		conn, err = d.Dial("tcp", netip.AddrPortFrom(dst, tcpEchoPort).String())
		return err
	})
	if err != nil {
		return res, fmt.Errorf("connect to %s: %w", dst, err)
	}
	defer conn.Close()
	out, in := make([]byte, recordSize), make([]byte, recordSize)
	for i := range n {
		binary.BigEndian.PutUint64(out, uint64(i))
		start := time.Now()
		_ = conn.SetDeadline(start.Add(echoTimeout))
		if _, err := conn.Write(out); err != nil {
			return res, fmt.Errorf("send record %d: %w", i, err)
		}
		if _, err := io.ReadFull(conn, in); err != nil {
			return res, fmt.Errorf("read record %d: %w", i, err)
		}
		res.RTT = append(res.RTT, time.Since(start))
		if got := binary.BigEndian.Uint64(in); got != uint64(i) {
			return res, fmt.Errorf("record %d came back as %d", i, got)
		}
	}
	return res, nil
}

// stream is what a UDP stream's sender got back from the echo server.
type stream struct {
	Sent, Received, OutOfOrder, Dups int
}

func (s stream) ok() bool { return s.Received == s.Sent && s.OutOfOrder == 0 && s.Dups == 0 }

func (s stream) String() string {
	return fmt.Sprintf("%d sent, %d back, %d out of order, %d duplicated", s.Sent, s.Received, s.OutOfOrder, s.Dups)
}

// udpStream sends n numbered datagrams from ns (from src) to dst's echo
// server, one every gap, and counts the echoes and those that come back
// out of order. during (if not nil) runs alongside once a third of the
// stream is sent, e.g. a change of the delay.
func udpStream(ns string, src, dst netip.Addr, n int, gap time.Duration, during func() error) (stream, error) {
	st := stream{Sent: n}
	var conn *net.UDPConn
	err := inNS(ns, func() error {
		var err error
		conn, err = net.ListenUDP("udp", &net.UDPAddr{IP: src.AsSlice()})
		return err
	})
	if err != nil {
		return st, fmt.Errorf("UDP socket on %s: %w", src, err)
	}
	defer conn.Close()
	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst, udpEchoPort))
	var (
		wg        sync.WaitGroup
		sendErr   error
		duringErr error
		sentAll   = make(chan time.Time, 1)
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, recordSize)
		for i := range n {
			if i == n/3 && during != nil {
				wg.Add(1)
				go func() { defer wg.Done(); duringErr = during() }()
			}
			binary.BigEndian.PutUint64(buf, uint64(i))
			if _, err := conn.WriteToUDP(buf, to); err != nil {
				sendErr = fmt.Errorf("send datagram %d: %w", i, err)
				break
			}
			time.Sleep(gap)
		}
		sentAll <- time.Now()
	}()
	seen := make([]bool, n)
	last := -1
	buf := make([]byte, 2048)
	idle := time.Now().Add(time.Hour)
	for st.Received+st.Dups < n {
		select {
		case t := <-sentAll:
			idle = t.Add(echoTimeout)
		default:
		}
		dl := time.Now().Add(50 * time.Millisecond)
		if idle.Before(dl) {
			dl = idle
		}
		_ = conn.SetReadDeadline(dl)
		k, err := conn.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if time.Now().After(idle) {
					break
				}
				continue
			}
			return st, fmt.Errorf("read echo: %w", err)
		}
		if k < 8 {
			continue
		}
		seq := int(binary.BigEndian.Uint64(buf))
		if seq < 0 || seq >= n {
			continue
		}
		if seen[seq] {
			st.Dups++
			continue
		}
		seen[seq] = true
		st.Received++
		if seq < last {
			st.OutOfOrder++
		}
		last = max(last, seq)
	}
	wg.Wait()
	return st, errors.Join(sendErr, duringErr)
}
