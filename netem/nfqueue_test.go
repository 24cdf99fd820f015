package netem

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func TestConfigBindMsg(t *testing.T) {
	b := configBindMsg(9, 7274, 100000)
	ne := binary.NativeEndian
	if int(ne.Uint32(b)) != len(b) || len(b)%4 != 0 {
		t.Fatalf("length field %d, len %d", ne.Uint32(b), len(b))
	}
	if ne.Uint16(b[4:]) != 3<<8|2 {
		t.Fatalf("type %#x, want NFQNL_MSG_CONFIG", ne.Uint16(b[4:]))
	}
	if ne.Uint16(b[6:]) != unix.NLM_F_REQUEST|unix.NLM_F_ACK || ne.Uint32(b[8:]) != 9 {
		t.Fatalf("flags/seq wrong: % x", b[:16])
	}
	if binary.BigEndian.Uint16(b[18:]) != 7274 {
		t.Fatalf("res_id %d", binary.BigEndian.Uint16(b[18:]))
	}
	attrs := map[uint16][]byte{}
	for a := b[20:]; len(a) >= 4; {
		l := int(ne.Uint16(a))
		attrs[ne.Uint16(a[2:])] = a[4:l]
		a = a[nlAlign(l):]
	}
	if c := attrs[nfqaCfgCmd]; len(c) != 4 || c[0] != nfqnlCfgCmdBind {
		t.Fatalf("cmd attr % x", c)
	}
	if p := attrs[nfqaCfgParams]; len(p) != 5 || binary.BigEndian.Uint32(p) != 40 || p[4] != nfqnlCopyPacket {
		t.Fatalf("params attr % x (want copy_range 40, COPY_PACKET)", p)
	}
	if m := attrs[nfqaCfgQueueMax]; binary.BigEndian.Uint32(m) != 100000 {
		t.Fatalf("maxlen attr % x", m)
	}
	if f := attrs[nfqaCfgFlags]; binary.BigEndian.Uint32(f) != nfqaCfgFGSO || binary.BigEndian.Uint32(attrs[nfqaCfgMask]) != nfqaCfgFGSO {
		t.Fatalf("flags % x mask % x", f, attrs[nfqaCfgMask])
	}
}

func TestVerdictBatchMsg(t *testing.T) {
	b := verdictBatchMsg(5, 3, 0xdeadbeef, nfAccept)
	ne := binary.NativeEndian
	if ne.Uint16(b[4:]) != 3<<8|3 || ne.Uint16(b[6:])&unix.NLM_F_ACK != 0 {
		t.Fatalf("type/flags % x", b[4:8])
	}
	if len(b) != 16+4+4+8 || ne.Uint16(b[20:]) != 12 || ne.Uint16(b[22:]) != nfqaVerdictHdr {
		t.Fatalf("attr header % x", b[20:])
	}
	if binary.BigEndian.Uint32(b[24:]) != nfAccept || binary.BigEndian.Uint32(b[28:]) != 0xdeadbeef {
		t.Fatalf("verdict hdr % x", b[24:])
	}
}

// packetMsg builds a kernel packet message as nfqnl_build_packet_message
// would, with a mark attribute before the packet header.
func packetMsg(id uint32) []byte {
	hdr := append(be32(id), 0x08, 0x00, 3) // id, hw_protocol, hook
	return nfqMessage(nfqnlMsgPacket, 0, 0, 1, nlAttr{3, be32(42)}, nlAttr{nfqaPacketHdr, hdr})
}

// stampedPacketMsg adds NFQA_TIMESTAMP (big-endian seconds, microseconds)
// after the packet header, as the kernel does for packets queued at
// PREROUTING while receive stamps are on.
func stampedPacketMsg(id uint32, sec, usec uint64) []byte {
	hdr := append(be32(id), 0x08, 0x00, 0)
	ts := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, sec), usec)
	return nfqMessage(nfqnlMsgPacket, 0, 0, 1, nlAttr{nfqaPacketHdr, hdr}, nlAttr{3, be32(42)}, nlAttr{nfqaTimestamp, ts})
}

func TestParsePayloadAddrs(t *testing.T) {
	v4 := make([]byte, 40)
	v4[0] = 0x45
	copy(v4[12:], []byte{172, 18, 0, 3})
	copy(v4[16:], []byte{172, 18, 0, 2})
	v6 := make([]byte, 40)
	v6[0] = 0x60
	v6[8], v6[23] = 0xfd, 1
	v6[24], v6[39] = 0xfd, 2
	hdr := append(be32(5), 0x08, 0x00, 0)
	var got []pktInfo
	buf := append(nfqMessage(nfqnlMsgPacket, 0, 0, 1, nlAttr{nfqaPacketHdr, hdr}, nlAttr{nfqaPayload, v4}),
		nfqMessage(nfqnlMsgPacket, 0, 0, 1, nlAttr{nfqaPacketHdr, hdr}, nlAttr{nfqaPayload, v6})...)
	buf = append(buf, nfqMessage(nfqnlMsgPacket, 0, 0, 1, nlAttr{nfqaPacketHdr, hdr}, nlAttr{nfqaPayload, v4[:12]})...)
	if err := parseNfqMessages(buf, func(p pktInfo) { got = append(got, p) }, func(nlError) {}); err != nil {
		t.Fatal(err)
	}
	if got[0].src.String() != "172.18.0.3" || got[0].dst.String() != "172.18.0.2" {
		t.Fatalf("IPv4 addresses %v -> %v", got[0].src, got[0].dst)
	}
	if got[1].src.String() != "fd00::1" || got[1].dst.String() != "fd00::2" {
		t.Fatalf("IPv6 addresses %v -> %v", got[1].src, got[1].dst)
	}
	if got[2].src.IsValid() {
		t.Fatalf("a truncated header gave address %v", got[2].src)
	}
}

func TestParseTimestamp(t *testing.T) {
	var got []pktInfo
	buf := append(stampedPacketMsg(7, 1796124697, 123456), packetMsg(8)...)
	if err := parseNfqMessages(buf, func(p pktInfo) { got = append(got, p) }, func(nlError) {}); err != nil {
		t.Fatal(err)
	}
	want := []pktInfo{{id: 7, rxNs: 1796124697*1e9 + 123456*1e3}, {id: 8}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("parsed %+v, want %+v", got, want)
	}
}

func TestParseNfqMessages(t *testing.T) {
	errMsg := make([]byte, 16+4+16)
	ne := binary.NativeEndian
	ne.PutUint32(errMsg, uint32(len(errMsg)))
	ne.PutUint16(errMsg[4:], unix.NLMSG_ERROR)
	ne.PutUint32(errMsg[8:], 77)
	ne.PutUint32(errMsg[16:], uint32(0xffffffff)) // -EPERM
	var buf []byte
	buf = append(buf, packetMsg(10)...)
	buf = append(buf, errMsg...)
	buf = append(buf, packetMsg(11)...)
	var ids []uint32
	var errs []nlError
	if err := parseNfqMessages(buf, func(p pktInfo) { ids = append(ids, p.id) }, func(e nlError) { errs = append(errs, e) }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] != 10 || ids[1] != 11 {
		t.Fatalf("ids %v", ids)
	}
	if len(errs) != 1 || errs[0].seq != 77 || errs[0].errno != unix.EPERM {
		t.Fatalf("errors %+v", errs)
	}
	if err := parseNfqMessages(buf[:10], func(pktInfo) {}, func(nlError) {}); err != nil {
		t.Fatalf("short tail: %v", err)
	}
	bad := packetMsg(1)
	ne.PutUint32(bad, 999)
	if err := parseNfqMessages(bad, func(pktInfo) {}, func(nlError) {}); err == nil {
		t.Fatal("accepted a message longer than the buffer")
	}
}

// appendVerdictMsg writes the same bytes nfqMessage builds for a verdict
// on one packet.
func TestAppendVerdictMsg(t *testing.T) {
	want := nfqMessage(nfqnlMsgVerdict, unix.NLM_F_REQUEST, 7, 4242, nlAttr{nfqaVerdictHdr, append(be32(nfAccept), be32(0xdeadbeef)...)})
	got := appendVerdictMsg([]byte{1, 2}, 7, 4242, 0xdeadbeef, nfAccept)
	if !bytes.Equal(got[2:], want) || got[0] != 1 {
		t.Fatalf("appendVerdictMsg\n got %x\nwant %x", got[2:], want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = appendVerdictMsg(got[:0], 1, 1, 1, nfAccept) }); n != 0 {
		t.Fatalf("%v allocations per message into a buffer with room", n)
	}
}
