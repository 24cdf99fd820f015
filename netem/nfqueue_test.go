package netem

import (
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
	if p := attrs[nfqaCfgParams]; len(p) != 5 || binary.BigEndian.Uint32(p) != 0 || p[4] != nfqnlCopyMeta {
		t.Fatalf("params attr % x (want copy_range 0, COPY_META)", p)
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
	if err := parseNfqMessages(buf, func(id uint32) { ids = append(ids, id) }, func(e nlError) { errs = append(errs, e) }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] != 10 || ids[1] != 11 {
		t.Fatalf("ids %v", ids)
	}
	if len(errs) != 1 || errs[0].seq != 77 || errs[0].errno != unix.EPERM {
		t.Fatalf("errors %+v", errs)
	}
	if err := parseNfqMessages(buf[:10], func(uint32) {}, func(nlError) {}); err != nil {
		t.Fatalf("short tail: %v", err)
	}
	bad := packetMsg(1)
	ne.PutUint32(bad, 999)
	if err := parseNfqMessages(bad, func(uint32) {}, func(nlError) {}); err == nil {
		t.Fatal("accepted a message longer than the buffer")
	}
}
