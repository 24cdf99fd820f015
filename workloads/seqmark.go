package workloads

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"strconv"
)

// SeqHeader is the header the load client marks each request with: its
// sequence number in the load run (warmup included), as Result.Seq
// numbers it. An HTTP server ignores a header it does not know, so the
// mark changes nothing for the app; the captures read it back and join
// each request on the wire to its latency by identity (Anatomize).
//
// Why a header and not the TCP sequence range a request occupied: the
// load client sends through net/http, which writes on connections it
// dials and redials by itself (a kept-alive connection closed under it,
// a transparent re-send), so the client would have to count the bytes
// of every connection and learn each one's initial sequence number from
// the capture's SYN, which a capture started after the connect never
// sees. The header needs neither: it travels in the request's first
// segment, whatever connection carries it.
const SeqHeader = "X-Rttlab-Seq"

// seqMarker is how the mark starts on the wire: Go writes header names
// in their canonical form, one a line, with ": " before the value.
var seqMarker = []byte("\r\n" + http.CanonicalHeaderKey(SeqHeader) + ": ")

// maxSeqDigits bounds the digits of a mark (MaxRequests has 7).
const maxSeqDigits = 9

// seqMark returns the sequence number a request's first segment carries
// in payload (what the capture kept of it), plus one; 0 when it carries
// none or the capture cut the mark short.
func seqMark(payload []byte) int {
	i := bytes.Index(payload, seqMarker)
	if i < 0 {
		return 0
	}
	v := payload[i+len(seqMarker):]
	end := bytes.IndexByte(v, '\r')
	if end < 1 || end > maxSeqDigits {
		return 0
	}
	n, err := strconv.Atoi(string(v[:end]))
	if err != nil || n < 0 {
		return 0
	}
	return n + 1
}

// tcpPayload returns the TCP payload an Ethernet frame carries, cut to
// what the capture kept (nil for anything else).
func tcpPayload(f []byte) []byte {
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:14]) != 0x0800 {
		return nil
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[9] != 6 || ihl < 20 || len(ip) < ihl+13 || binary.BigEndian.Uint16(ip[6:8])&0x1fff != 0 {
		return nil
	}
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	if total == 0 || total > len(ip) {
		total = len(ip)
	}
	off := ihl + int(ip[ihl+12]>>4)*4
	if off >= total {
		return nil
	}
	return ip[off:total]
}
