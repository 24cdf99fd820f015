package workloads

import (
	"context"
	"encoding/binary"
	"net/netip"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestPingResultFinish(t *testing.T) {
	r := PingResult{Samples: []time.Duration{4, 1, 3, 2}}.finish()
	if r.Min != 1 || r.Max != 4 || r.Median != 2 || r.Mean != 2 {
		t.Fatalf("stats = min %v max %v median %v mean %v, want 1 4 2 2", r.Min, r.Max, r.Median, r.Mean)
	}
	r = PingResult{Samples: []time.Duration{5, 1, 3}}.finish()
	if r.Median != 3 || r.Mean != 3 {
		t.Fatalf("odd stats = median %v mean %v, want 3 3", r.Median, r.Mean)
	}
	if r := (PingResult{}).finish(); r.Median != 0 || r.Min != 0 {
		t.Fatalf("empty result got stats %+v", r)
	}
}

func TestPingBadInput(t *testing.T) {
	ctx := context.Background()
	if _, err := Ping(ctx, netip.MustParseAddr("127.0.0.1"), 0, time.Millisecond); err == nil {
		t.Fatal("count 0 accepted")
	}
	if _, err := Ping(ctx, netip.MustParseAddr("127.0.0.1"), 1, -time.Millisecond); err == nil {
		t.Fatal("negative interval accepted")
	}
}

func TestPingLoopback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("raw ICMP needs CAP_NET_RAW: run as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, dst := range []string{"127.0.0.1", "::1"} {
		r, err := Ping(ctx, netip.MustParseAddr(dst), 5, 2*time.Millisecond)
		if err != nil {
			t.Fatalf("ping %s: %v", dst, err)
		}
		if r.Sent != 5 || r.Received != 5 || r.Lost != 0 || len(r.Samples) != 5 {
			t.Fatalf("ping %s: sent %d received %d lost %d", dst, r.Sent, r.Received, r.Lost)
		}
		if r.Min <= 0 || r.Min > r.Median || r.Median > r.Max || r.Median > 50*time.Millisecond {
			t.Fatalf("ping %s: implausible stats %+v", dst, r)
		}
		t.Logf("ping %s: median %v min %v max %v", dst, r.Median, r.Min, r.Max)
	}
}

// A reply's kernel stamp is read from its SCM_TIMESTAMPNS message; a
// zero or missing stamp is none.
func TestStampOf(t *testing.T) {
	msg := func(sec, nsec uint64) []byte {
		b := make([]byte, unix.CmsgSpace(16))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS
		h.SetLen(unix.CmsgLen(16))
		binary.NativeEndian.PutUint64(b[unix.CmsgLen(0):], sec)
		binary.NativeEndian.PutUint64(b[unix.CmsgLen(0)+8:], nsec)
		return b
	}
	if ts, ok := stampOf(msg(1700000000, 123)); !ok || ts != 1700000000*1e9+123 {
		t.Errorf("stamp %d, %v", ts, ok)
	}
	if _, ok := stampOf(msg(0, 0)); ok {
		t.Error("a zero stamp counted")
	}
	if _, ok := stampOf(nil); ok {
		t.Error("no message, a stamp")
	}
}

// Both timings time every echo (on the wire to the reply's kernel stamp,
// in process to its read; the medians are logged).
func TestPingTimings(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("raw ICMP needs CAP_NET_RAW: run as root")
	}
	ctx := context.Background()
	for _, timing := range []PingTiming{PingOnWire, PingInProcess} {
		r, err := PingTimed(ctx, netip.MustParseAddr("127.0.0.1"), 20, 0, timing)
		if err != nil || r.Received != 20 || r.Min <= 0 {
			t.Fatalf("timing %d: %+v, %v", timing, r, err)
		}
		t.Logf("timing %d: median %v", timing, r.Median)
	}
}
