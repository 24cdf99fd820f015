package workloads

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
)

// PacketKeyLen is the length of a PacketKey: IPv4 source (4), destination
// (4), protocol (1), identification (2), flags and fragment offset (2),
// then 16 bytes of the transport header (see NewPacketKey).
const PacketKeyLen = 29

// keyTransport is where the transport bytes start in a PacketKey.
const keyTransport = 13

// PacketKey names one IPv4 packet by the bytes that no hop between two
// containers of one host changes: not the TTL, not the IP checksum. Two
// captures of the same packet (at the sender and at the receiver) give the
// same key; two different packets give the same key only when their IP
// identification wrapped around with identical transport bytes, or for
// a sender that repeats a packet byte for byte.
type PacketKey [PacketKeyLen]byte

// NewPacketKey builds the key of an IPv4 packet from its header fields and
// the bytes of its transport header (t: from the transport header's first
// byte to the end of the captured packet, at most the IP total length).
// Which transport bytes count:
//
//	TCP   ports, sequence, acknowledgement, data offset and flags, window
//	ICMP  type, code, identifier, sequence and 10 bytes of payload
//	UDP   ports, length and 10 bytes of payload
//	other the first 16 bytes
//
// A non-first fragment (offset > 0) has no transport header: its key is
// the IP fields alone. Bytes the capture did not keep stay zero.
func NewPacketKey(src, dst netip.Addr, proto uint8, id, fragment uint16, t []byte) PacketKey {
	var k PacketKey
	s4, d4 := src.Unmap().As4(), dst.Unmap().As4()
	copy(k[0:4], s4[:])
	copy(k[4:8], d4[:])
	k[8] = proto
	binary.BigEndian.PutUint16(k[9:11], id)
	binary.BigEndian.PutUint16(k[11:13], fragment)
	if fragment&0x1fff != 0 {
		return k
	}
	out := k[keyTransport:]
	switch proto {
	case 1: // ICMP: skip the checksum (bytes 2-3)
		copy(out[0:2], prefix(t, 0, 2))
		copy(out[2:], prefix(t, 4, 18))
	case 17: // UDP: skip the checksum (bytes 6-7)
		copy(out[0:6], prefix(t, 0, 6))
		copy(out[6:], prefix(t, 8, 18))
	default: // TCP's first 16 bytes stop before its checksum
		copy(out, prefix(t, 0, 16))
	}
	return k
}

// prefix returns t[from:to], cut to what t holds.
func prefix(t []byte, from, to int) []byte {
	if from >= len(t) {
		return nil
	}
	return t[from:min(to, len(t))]
}

// Src is the packet's source address.
func (k PacketKey) Src() netip.Addr { return netip.AddrFrom4([4]byte(k[0:4])) }

// Dst is the packet's destination address.
func (k PacketKey) Dst() netip.Addr { return netip.AddrFrom4([4]byte(k[4:8])) }

// Proto is the packet's IP protocol number.
func (k PacketKey) Proto() uint8 { return k[8] }

// MarshalText writes the key as hex digits.
func (k PacketKey) MarshalText() ([]byte, error) {
	return hex.AppendEncode(nil, k[:]), nil
}

// UnmarshalText reads a key written by MarshalText.
func (k *PacketKey) UnmarshalText(b []byte) error {
	if len(b) != 2*PacketKeyLen {
		return fmt.Errorf("packet key %.80q: want %d hex digits, got %d", b, 2*PacketKeyLen, len(b))
	}
	if _, err := hex.Decode(k[:], b); err != nil {
		return fmt.Errorf("packet key %.80q: not hex digits", b)
	}
	return nil
}

// keyOfFrame returns the key of an Ethernet frame carrying IPv4 and, for
// TCP, its payload's length (false for anything else, or a header cut
// short). wire is the frame's length on the wire (the capture may keep
// less of it); it stands in for an IP total length of 0 (a GSO packet
// over 64 KiB).
func keyOfFrame(f []byte, wire int) (PacketKey, int, bool) {
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:14]) != 0x0800 {
		return PacketKey{}, 0, false
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || ihl > len(ip) {
		return PacketKey{}, 0, false
	}
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	if total == 0 {
		total = wire - 14
	}
	end := min(total, len(ip))
	var t []byte
	if end > ihl {
		t = ip[ihl:end] // without the Ethernet padding of short frames
	}
	src, dst := netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	k := NewPacketKey(src, dst, ip[9], binary.BigEndian.Uint16(ip[4:6]), binary.BigEndian.Uint16(ip[6:8]), t)
	payload := 0
	if ip[9] == 6 && len(t) >= 13 && binary.BigEndian.Uint16(ip[6:8])&0x1fff == 0 {
		payload = max(total-ihl-int(t[12]>>4)*4, 0)
	}
	return k, payload, true
}
