package workloads

import (
	"encoding/binary"
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
)

var (
	addrA = netip.MustParseAddr("172.18.0.2")
	addrB = netip.MustParseAddr("172.18.0.3")
	addrC = netip.MustParseAddr("172.18.0.9")
)

// ipFrame builds an Ethernet frame carrying an IPv4 packet with the given
// header fields and transport bytes (the checksum left as given).
func ipFrame(src, dst netip.Addr, proto uint8, id uint16, ttl uint8, csum uint16, transport []byte) []byte {
	f := make([]byte, 14+20+len(transport))
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(transport)))
	binary.BigEndian.PutUint16(ip[4:], id)
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF
	ip[8], ip[9] = ttl, proto
	binary.BigEndian.PutUint16(ip[10:], csum)
	s4, d4 := src.As4(), dst.As4()
	copy(ip[12:], s4[:])
	copy(ip[16:], d4[:])
	copy(ip[20:], transport)
	return f
}

func icmpEcho(typ uint8, csum, id, seq uint16, payload string) []byte {
	b := make([]byte, 8, 8+len(payload))
	b[0] = typ
	binary.BigEndian.PutUint16(b[2:], csum)
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	return append(b, payload...)
}

func tcpHeader(sport, dport uint16, seq, ack uint32, flags uint8, window, csum uint16) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint32(b[4:], seq)
	binary.BigEndian.PutUint32(b[8:], ack)
	b[12], b[13] = 5<<4, flags
	binary.BigEndian.PutUint16(b[14:], window)
	binary.BigEndian.PutUint16(b[16:], csum)
	return b
}

func mustKey(t *testing.T, f []byte) PacketKey {
	t.Helper()
	k, _, ok := keyOfFrame(f, len(f))
	if !ok {
		t.Fatalf("no key for frame % x", f)
	}
	return k
}

// TTL and the checksums change between captures of one packet; the key
// does not.
func TestPacketKeyIgnoresTTLAndChecksums(t *testing.T) {
	echo := icmpEcho(8, 0x1111, 7, 3, "payload-0123456789")
	sent := mustKey(t, ipFrame(addrA, addrB, 1, 42, 64, 0xaaaa, echo))
	got := mustKey(t, ipFrame(addrA, addrB, 1, 42, 63, 0xbbbb, icmpEcho(8, 0x2222, 7, 3, "payload-0123456789")))
	if sent != got {
		t.Errorf("same packet, different keys:\n%x\n%x", sent, got)
	}
	if sent.Src() != addrA || sent.Dst() != addrB || sent.Proto() != 1 {
		t.Errorf("key fields: %s -> %s proto %d", sent.Src(), sent.Dst(), sent.Proto())
	}
	// Whatever else differs makes another key.
	for name, f := range map[string][]byte{
		"ip id":     ipFrame(addrA, addrB, 1, 43, 64, 0, echo),
		"icmp seq":  ipFrame(addrA, addrB, 1, 42, 64, 0, icmpEcho(8, 0, 7, 4, "payload-0123456789")),
		"icmp id":   ipFrame(addrA, addrB, 1, 42, 64, 0, icmpEcho(8, 0, 8, 3, "payload-0123456789")),
		"icmp type": ipFrame(addrA, addrB, 1, 42, 64, 0, icmpEcho(0, 0, 7, 3, "payload-0123456789")),
		"payload":   ipFrame(addrA, addrB, 1, 42, 64, 0, icmpEcho(8, 0, 7, 3, "PAYLOAD-0123456789")),
		"reversed":  ipFrame(addrB, addrA, 1, 42, 64, 0, echo),
	} {
		if mustKey(t, f) == sent {
			t.Errorf("%s: same key", name)
		}
	}
}

func TestPacketKeyTCPAndUDP(t *testing.T) {
	h := tcpHeader(40000, 5432, 1000, 2000, 0x18, 512, 0x1234)
	k := mustKey(t, ipFrame(addrA, addrB, 6, 9, 64, 0, append(h, "Q...."...)))
	h2 := tcpHeader(40000, 5432, 1000, 2000, 0x18, 512, 0x9999) // checksum only
	if k2 := mustKey(t, ipFrame(addrA, addrB, 6, 9, 60, 1, append(h2, "Q...."...))); k2 != k {
		t.Error("TCP checksum or TTL changed the key")
	}
	for name, h := range map[string][]byte{
		"seq":    tcpHeader(40000, 5432, 1001, 2000, 0x18, 512, 0),
		"ack":    tcpHeader(40000, 5432, 1000, 2001, 0x18, 512, 0),
		"flags":  tcpHeader(40000, 5432, 1000, 2000, 0x10, 512, 0),
		"port":   tcpHeader(40001, 5432, 1000, 2000, 0x18, 512, 0),
		"window": tcpHeader(40000, 5432, 1000, 2000, 0x18, 513, 0),
	} {
		if mustKey(t, ipFrame(addrA, addrB, 6, 9, 64, 0, h)) == k {
			t.Errorf("TCP %s: same key", name)
		}
	}
	udp := func(csum uint16, payload string) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint16(b[0:], 9)
		binary.BigEndian.PutUint16(b[2:], 53)
		binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
		binary.BigEndian.PutUint16(b[6:], csum)
		return append(b, payload...)
	}
	u := mustKey(t, ipFrame(addrA, addrB, 17, 1, 64, 0, udp(1, "abcdefghij-tail")))
	if mustKey(t, ipFrame(addrA, addrB, 17, 1, 64, 0, udp(2, "abcdefghij-tail"))) != u {
		t.Error("UDP checksum changed the key")
	}
	if mustKey(t, ipFrame(addrA, addrB, 17, 1, 64, 0, udp(1, "abcdefghiJ-tail"))) == u {
		t.Error("UDP payload prefix not in the key")
	}
}

// Ethernet padding after the IP packet is not part of the key; a
// non-first fragment has no transport bytes; anything but IPv4 has no key.
func TestPacketKeyPaddingFragmentsAndOthers(t *testing.T) {
	f := ipFrame(addrA, addrB, 17, 5, 64, 0, []byte{0, 9, 0, 53, 0, 8, 0, 0})
	padded := append(append([]byte(nil), f...), 0xee, 0xee, 0xee, 0xee)
	if mustKey(t, f) != mustKey(t, padded) {
		t.Error("padding changed the key")
	}
	frag := ipFrame(addrA, addrB, 17, 5, 64, 0, []byte("not a UDP header"))
	binary.BigEndian.PutUint16(frag[14+6:], 0x00b9) // offset 185
	k := mustKey(t, frag)
	for _, b := range k[keyTransport:] {
		if b != 0 {
			t.Fatalf("fragment key has transport bytes: %x", k)
		}
	}
	arp := make([]byte, 60)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	v6 := ipFrame(addrA, addrB, 6, 0, 64, 0, nil)
	v6[14] = 0x60
	for name, f := range map[string][]byte{"arp": arp, "ipv6 version": v6, "short": f[:20]} {
		if _, _, ok := keyOfFrame(f, len(f)); ok {
			t.Errorf("%s: got a key", name)
		}
	}
}

func TestPacketKeyText(t *testing.T) {
	k := mustKey(t, ipFrame(addrA, addrB, 1, 42, 64, 0, icmpEcho(8, 0, 7, 3, "x")))
	b, err := json.Marshal(CapturedPacket{T: 5, Out: true, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	var back CapturedPacket
	if err := json.Unmarshal(b, &back); err != nil || back.Key != k || !back.Out || back.T != 5 {
		t.Fatalf("round trip of %s: %+v, %v", b, back, err)
	}
	for _, bad := range []string{`"abc"`, `"` + strings.Repeat("zz", PacketKeyLen) + `"`} {
		err := json.Unmarshal([]byte(bad), &back.Key)
		if err == nil || !strings.Contains(err.Error(), "packet key") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// The kernel filter keeps both directions between the local address and
// each of its peers, cut to the snap length, and nothing else.
func TestFlowFilter(t *testing.T) {
	addrD := netip.MustParseAddr("10.0.0.9")
	long := ipFrame(addrA, addrB, 6, 1, 64, 0, make([]byte, 400))
	arp := make([]byte, 60)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	for _, peers := range [][]netip.Addr{{addrB}, {addrB, addrD}} {
		vm, err := bpf.NewVM(flowFilter(addrA, peers))
		if err != nil {
			t.Fatal(err)
		}
		withD := 0
		if len(peers) == 2 {
			withD = CaptureSnapLen
		}
		for _, c := range []struct {
			name string
			f    []byte
			want int
		}{
			{"a to b", long, CaptureSnapLen},
			{"b to a", ipFrame(addrB, addrA, 1, 1, 64, 0, icmpEcho(0, 0, 1, 1, "")), CaptureSnapLen},
			{"a to c", ipFrame(addrA, addrC, 6, 1, 64, 0, make([]byte, 20)), 0},
			{"c to b", ipFrame(addrC, addrB, 6, 1, 64, 0, make([]byte, 20)), 0},
			{"c to a", ipFrame(addrC, addrA, 6, 1, 64, 0, make([]byte, 20)), 0},
			{"a to d", ipFrame(addrA, addrD, 6, 1, 64, 0, make([]byte, 20)), withD},
			{"d to a", ipFrame(addrD, addrA, 6, 1, 64, 0, make([]byte, 20)), withD},
			{"b to d", ipFrame(addrB, addrD, 6, 1, 64, 0, make([]byte, 20)), 0},
			{"d to b", ipFrame(addrD, addrB, 6, 1, 64, 0, make([]byte, 20)), 0},
			{"arp", arp, 0},
		} {
			n, err := vm.Run(c.f)
			if err != nil || n != c.want {
				t.Errorf("peers %v: %s: kept %d bytes (want %d), %v", peers, c.name, n, c.want, err)
			}
		}
	}
}

// A TCP frame's payload length comes from the IP total length less both
// headers; a total length of 0 (a GSO packet over 64 KiB) takes the wire
// length; other protocols have none.
func TestKeyOfFramePayload(t *testing.T) {
	seg := make([]byte, 20+300)
	seg[12] = 5 << 4 // data offset: 20 bytes
	f := ipFrame(addrA, addrB, 6, 1, 64, 0, seg)
	if _, n, ok := keyOfFrame(f[:CaptureSnapLen], len(f)); !ok || n != 300 {
		t.Errorf("TCP: payload %d, %v; want 300", n, ok)
	}
	big := slices.Clone(f)
	binary.BigEndian.PutUint16(big[16:18], 0)
	if _, n, ok := keyOfFrame(big[:CaptureSnapLen], 14+20+20+70000); !ok || n != 70000 {
		t.Errorf("GSO: payload %d, %v; want 70000", n, ok)
	}
	if _, n, ok := keyOfFrame(ipFrame(addrA, addrB, 1, 1, 64, 0, icmpEcho(0, 0, 1, 1, "")), 0); !ok || n != 0 {
		t.Errorf("ICMP: payload %d, %v; want 0", n, ok)
	}
}
