package workloads

import (
	"bytes"
	"context"
	"net/netip"
	"strconv"
	"testing"
)

func TestSeqMark(t *testing.T) {
	for _, c := range []struct {
		payload string
		want    int
	}{
		{"GET / HTTP/1.1\r\nHost: app\r\nX-Rttlab-Seq: 0\r\n\r\n", 1},
		{"GET / HTTP/1.1\r\nHost: app\r\nX-Rttlab-Seq: 41\r\nZ: 1\r\n\r\n", 42},
		{"GET / HTTP/1.1\r\nHost: app\r\nX-Rttlab-Seq: 41", 0}, // cut short by the snap
		{"GET / HTTP/1.1\r\nHost: app\r\n\r\n", 0},
		{"GET / HTTP/1.1\r\nX-Rttlab-Seq: x1\r\n", 0},
		{"GET / HTTP/1.1\r\nX-Rttlab-Seq: \r\n", 0},
		{"GET / HTTP/1.1\r\nX-Rttlab-Seq: 1234567890\r\n", 0},
		{"", 0},
	} {
		if got := seqMark([]byte(c.payload)); got != c.want {
			t.Errorf("%q: mark %d, want %d", c.payload, got, c.want)
		}
	}
}

// The mark of a built-in mix's request ends within what the capture
// keeps of its first segment: CaptureSnapLen less the Ethernet, IPv4 and
// TCP headers (with the timestamps option Linux sends), for the longest
// paths and sequence numbers a plan allows.
func TestSeqMarkWithinSnap(t *testing.T) {
	const headers = 14 + 20 + 32
	room := CaptureSnapLen - headers
	aimeos, err := AimeosMix(AimeosOptions{})
	if err != nil {
		t.Fatal(err)
	}
	longest := 0
	for _, m := range []Mix{RedmineMix(), aimeos} {
		seq, err := Sequence(m, 1, 2000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range seq {
			req, err := NewRequest(context.Background(), "http://app:65535", r)
			if err != nil {
				t.Fatal(err)
			}
			req.Header, _ = requestHeader(nil)
			req.Header[SeqHeader] = []string{strconv.Itoa(MaxRequests - 1)}
			var b bytes.Buffer
			if err := req.Write(&b); err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(b.Bytes(), seqMarker)
			end := i + bytes.IndexByte(b.Bytes()[i+2:], '\r') + 3
			longest = max(longest, end)
			if end > room {
				t.Errorf("%s %s: the mark ends at byte %d of the request, the capture keeps %d", m.Name, r.Path, end, room)
			}
		}
	}
	t.Logf("the mark ends by byte %d; the capture keeps %d", longest, room)
}

// The capture reads the mark out of the frame it kept.
func TestTCPPayloadMark(t *testing.T) {
	payload := []byte("GET /x HTTP/1.1\r\nHost: app\r\nUser-Agent: rttlab-load\r\nX-Rttlab-Seq: 7\r\n\r\n")
	tcp := make([]byte, 32, 32+len(payload))
	tcp[12] = 8 << 4
	f := ipFrame(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), 6, 1, 64, 0, append(tcp, payload...))
	if got := seqMark(tcpPayload(f)); got != 8 {
		t.Errorf("mark %d, want 8", got)
	}
	if got := seqMark(tcpPayload(f[:len(f)-6])); got != 0 {
		t.Errorf("a frame cut inside the mark: mark %d, want 0", got)
	}
}
