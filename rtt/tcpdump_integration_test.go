package rtt

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/enginetest"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

// An independent check of the anatomy: while each task of a small study
// runs, Debian's tcpdump captures the load client's, the app's and the
// database's network namespaces (from the host, kernel stamps, one
// clock); the test reads the pcap files with a parser of its own, pairs
// the requests and the database's round trips itself, and compares each
// request with anatomy.jsonl: the two client↔app legs, the wire out and
// back and the database's time, each within 0.05 ms for at least 95% of
// each task's requests.
func TestIntegrationTcpdumpAgreesWithAnatomy(t *testing.T) {
	rt := enginetest.Engine(t)
	for _, tool := range []string{"tcpdump", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing (.ci/engine.sh installs tcpdump for the tests): %v", tool, err)
		}
	}
	// One task of each route of the smoke plan, at 1 ms (aimeos is built
	// only where Packagist answers).
	smoke, _ := BuiltinPlan("smoke")
	var routes []PlanApp
	for _, a := range smoke.Apps {
		if a.Name != "aimeos" {
			routes = append(routes, PlanApp{Name: a.Name, Routes: a.Routes, Mix: a.Mix})
		}
	}
	all := enginetest.BuiltApps(t, rt, "postgres", "agent", "go", "node", "rails", "axum", "redmine")
	zero := 0
	p := &Plan{Name: "tcpdump-check", Seed: 7, DelaysMs: []float64{1}, Runs: 1, Requests: 40, Warmup: 5,
		Apps: routes, ICMPCount: 5, SelectRuns: 1, SelectCalls: 10,
		TaskICMPCount: 2, TraceRequests: 5, UnshapedRuns: &zero, Calibrate: "off"}
	p.Defaults()
	w := &tcpdumpWatch{t: t, rt: rt, dir: t.TempDir(), tasks: map[int]*watchedTask{}}
	start := time.Now()
	dir, err := Run(context.Background(), engine.NewLab(rt, ""), rt, all, RunOptions{Plan: p, OutDir: t.TempDir(), Version: "test", TaskWatch: w.watch})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the study ran in %s", time.Since(start).Round(time.Second))
	d := afterRun(t, rt, dir)
	if len(d.Manifest.Tasks) != len(p.Tasks()) || len(d.Manifest.Tasks) < 8 {
		t.Fatalf("%d tasks, want one per route of the smoke plan (%d)", len(d.Manifest.Tasks), len(p.Tasks()))
	}
	for _, task := range d.Manifest.Tasks {
		target, err := apps.Resolve(all, task.App)
		if err != nil {
			t.Fatal(err)
		}
		port := uint16(target.Meta.Port)
		wt := w.tasks[task.ID]
		if wt == nil {
			t.Fatalf("task %d (%s) was never watched", task.ID, task.Route)
		}
		caps := map[string][]tdPacket{}
		for role, file := range wt.files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if caps[role], err = readCapture(b); err != nil {
				t.Fatalf("task %d, %s's capture: %v", task.ID, role, err)
			}
		}
		mine, err := dissect(caps, wt.addrs, port, 5432)
		if err != nil {
			t.Fatalf("task %d (%s): %v", task.ID, task.Route, err)
		}
		if len(mine) != p.Warmup+p.Requests {
			t.Fatalf("task %d (%s): %d requests in tcpdump's captures, the client sent %d", task.ID, task.Route, len(mine), p.Warmup+p.Requests)
		}
		last := 0
		for _, a := range d.Anatomy {
			if a.Task == task.ID {
				last = max(last, a.Attempt)
			}
		}
		rows := map[int]workloads.RequestAnatomy{}
		for _, a := range d.Anatomy {
			if a.Task == task.ID && a.Attempt == last {
				rows[a.Seq] = a.RequestAnatomy
			}
		}
		if len(rows) < p.Requests*95/100 {
			t.Errorf("task %d (%s): %d of %d measured requests taken apart by rttlab", task.ID, task.Route, len(rows), p.Requests)
		}
		ag := compareAnatomy(mine, rows)
		if ag.trips > 0 {
			t.Errorf("task %d (%s): %d requests with a different count of round trips", task.ID, task.Route, ag.trips)
		}
		for _, line := range ag.lines() {
			t.Logf("%s %s at %g ms (task %d, %d requests): %s", task.App, task.Route, task.RTTms, task.ID, ag.n, line)
		}
		for _, why := range ag.failures(tcpdumpAgreeMs, tcpdumpAgreeShare) {
			t.Errorf("%s %s at %g ms: %s", task.App, task.Route, task.RTTms, why)
		}
	}
}

// The parts agree when tcpdump's figure and rttlab's are within
// tcpdumpAgreeMs for tcpdumpAgreeShare of a task's requests.
const (
	tcpdumpAgreeMs    = 0.05
	tcpdumpAgreeShare = 0.95
)

// tcpdumpWatch starts tcpdump in the client's, the app's and the
// database's network namespaces before each attempt of a task, and stops
// it once the task's requests are done (RunOptions.TaskWatch).
type tcpdumpWatch struct {
	t     *testing.T
	rt    *engine.Runtime
	dir   string
	mu    sync.Mutex
	tasks map[int]*watchedTask
}

// watchedTask is the last watched attempt of a task: its pcap file and
// address by role.
type watchedTask struct {
	files map[string]string
	addrs map[string]netip.Addr
}

func (w *tcpdumpWatch) watch(ctx context.Context, task raw.Task, containers map[string]string) (func(), error) {
	wt := &watchedTask{files: map[string]string{}, addrs: map[string]netip.Addr{}}
	var runs []*tcpdumpRun
	stop := func() {
		for _, r := range runs {
			r.stop(w.t)
		}
	}
	for _, role := range []string{"client", "app", "db"} {
		id := containers[role]
		if id == "" {
			stop()
			return nil, fmt.Errorf("no %s container in %v", role, containers)
		}
		ins, err := w.rt.InspectContainer(ctx, id)
		if err != nil {
			stop()
			return nil, err
		}
		for _, ep := range ins.NetworkSettings.Networks {
			if a, err := netip.ParseAddr(ep.IPAddress); err == nil {
				wt.addrs[role] = a
			}
		}
		if ins.State == nil || ins.State.Pid == 0 || !wt.addrs[role].IsValid() {
			stop()
			return nil, fmt.Errorf("%s container %s: no process or no address", role, id)
		}
		file := filepath.Join(w.dir, fmt.Sprintf("task%d-%s-%d.pcap", task.ID, role, time.Now().UnixNano()))
		r, err := startTcpdump(ins.State.Pid, file)
		if err != nil {
			stop()
			return nil, fmt.Errorf("tcpdump in the %s's namespace: %w", role, err)
		}
		runs = append(runs, r)
		wt.files[role] = file
	}
	w.mu.Lock()
	w.tasks[task.ID] = wt
	w.mu.Unlock()
	return stop, nil
}

// tcpdumpRun is one tcpdump, started from the host in a container's
// network namespace.
type tcpdumpRun struct {
	cmd    *exec.Cmd
	stderr chan string // its lines after "listening on", then closed
}

// startTcpdump captures the TCP packets of eth0 in the network
// namespace of process pid into file, with the kernel's stamps in
// nanoseconds, and returns once tcpdump listens. Immediate mode hands
// each packet to tcpdump as it comes (not a ring block a second later),
// so none is left unread when it stops.
func startTcpdump(pid int, file string) (*tcpdumpRun, error) {
	cmd := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-n",
		"tcpdump", "-i", "eth0", "-n", "-s", "200", "-B", "16384", "--immediate-mode", "--time-stamp-precision=nano", "-w", file, "tcp")
	errOut, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &tcpdumpRun{cmd: cmd, stderr: make(chan string, 16)}
	listening := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(errOut)
		heard := false
		var first []string
		for sc.Scan() {
			if !heard {
				first = append(first, sc.Text())
				if strings.Contains(sc.Text(), "listening on") {
					heard = true
					listening <- nil
				}
				continue
			}
			r.stderr <- sc.Text()
		}
		if !heard {
			listening <- fmt.Errorf("tcpdump ended before it listened: %s", strings.Join(first, "; "))
		}
		close(r.stderr)
	}()
	select {
	case err := <-listening:
		if err != nil {
			_ = cmd.Wait()
			return nil, err
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, errors.New("tcpdump did not listen within 15 s")
	}
	return r, nil
}

// stop ends tcpdump (an interrupt: it writes out what it has read, so
// it is given a moment to read the last packets first) and reports the
// packets the kernel dropped.
func (r *tcpdumpRun) stop(t *testing.T) {
	time.Sleep(200 * time.Millisecond)
	_ = r.cmd.Process.Signal(os.Interrupt)
	var lines []string
	for l := range r.stderr {
		lines = append(lines, l)
	}
	_ = r.cmd.Wait()
	for _, l := range lines {
		if n, ok := strings.CutSuffix(l, " packets dropped by kernel"); ok && n != "0" {
			t.Errorf("tcpdump: %s", l)
		}
	}
}

// tdPacket is one captured IPv4 TCP packet.
type tdPacket struct {
	t        int64 // ns since the epoch
	src, dst netip.AddrPort
	seq      uint32
	flags    uint8
	n        int // payload bytes, from the IP header's total length
}

// readCapture reads a pcap (µs or ns, either byte order) or pcapng file
// of Ethernet frames and returns its IPv4 TCP packets.
func readCapture(b []byte) ([]tdPacket, error) {
	if len(b) < 24 {
		return nil, fmt.Errorf("%d bytes: no capture header", len(b))
	}
	if binary.LittleEndian.Uint32(b) == 0x0a0d0d0a {
		return readPcapng(b)
	}
	var bo binary.ByteOrder
	var unit int64
	switch {
	case binary.LittleEndian.Uint32(b) == 0xa1b2c3d4:
		bo, unit = binary.LittleEndian, 1000
	case binary.LittleEndian.Uint32(b) == 0xa1b23c4d:
		bo, unit = binary.LittleEndian, 1
	case binary.BigEndian.Uint32(b) == 0xa1b2c3d4:
		bo, unit = binary.BigEndian, 1000
	case binary.BigEndian.Uint32(b) == 0xa1b23c4d:
		bo, unit = binary.BigEndian, 1
	default:
		return nil, fmt.Errorf("magic %#x: neither pcap nor pcapng", b[:4])
	}
	if lt := bo.Uint32(b[20:24]) & 0xffff; lt != 1 {
		return nil, fmt.Errorf("link type %d, want Ethernet (1)", lt)
	}
	var out []tdPacket
	for off := 24; off < len(b); {
		if off+16 > len(b) {
			return nil, fmt.Errorf("record header cut at byte %d", off)
		}
		sec, frac, incl := int64(bo.Uint32(b[off:])), int64(bo.Uint32(b[off+4:])), int(bo.Uint32(b[off+8:]))
		off += 16
		if off+incl > len(b) {
			return nil, fmt.Errorf("record of %d bytes cut at byte %d", incl, off)
		}
		if p, ok := decodeFrame(b[off : off+incl]); ok {
			p.t = sec*1e9 + frac*unit
			out = append(out, p)
		}
		off += incl
	}
	return out, nil
}

// readPcapng reads a pcapng file's enhanced packet blocks, each interface
// with its time resolution.
func readPcapng(b []byte) ([]tdPacket, error) {
	var bo binary.ByteOrder = binary.LittleEndian
	type iface struct {
		link uint16
		unit func(ts uint64) int64 // ticks to ns
	}
	var ifaces []iface
	var out []tdPacket
	for off := 0; off+12 <= len(b); {
		typ := bo.Uint32(b[off:])
		if typ == 0x0a0d0d0a { // a section: its byte order
			if binary.LittleEndian.Uint32(b[off+8:]) == 0x1a2b3c4d {
				bo = binary.LittleEndian
			} else {
				bo = binary.BigEndian
			}
			ifaces = nil
		}
		n := int(bo.Uint32(b[off+4:]))
		if n < 12 || n%4 != 0 || off+n > len(b) {
			return nil, fmt.Errorf("block of %d bytes at byte %d", n, off)
		}
		body := b[off+8 : off+n-4]
		switch typ {
		case 1: // interface description: link type, options (if_tsresol)
			f := iface{link: bo.Uint16(body), unit: func(ts uint64) int64 { return int64(ts) * 1000 }}
			for o := 8; o+4 <= len(body); {
				code, l := bo.Uint16(body[o:]), int(bo.Uint16(body[o+2:]))
				if code == 0 || o+4+l > len(body) {
					break
				}
				if code == 9 && l >= 1 {
					r := body[o+4]
					if r&0x80 != 0 {
						return nil, fmt.Errorf("time resolution 2^-%d is not supported", r&0x7f)
					}
					div := int64(1)
					for i := 0; i < int(r); i++ {
						div *= 10
					}
					switch {
					case div <= 1e9:
						mul := 1e9 / div
						f.unit = func(ts uint64) int64 { return int64(ts) * mul }
					default:
						f.unit = func(ts uint64) int64 { return int64(ts) / (div / 1e9) }
					}
				}
				o += 4 + (l+3)&^3
			}
			ifaces = append(ifaces, f)
		case 6: // enhanced packet
			id := int(bo.Uint32(body))
			if id >= len(ifaces) {
				return nil, fmt.Errorf("packet of interface %d, %d described", id, len(ifaces))
			}
			if ifaces[id].link != 1 {
				return nil, fmt.Errorf("link type %d, want Ethernet (1)", ifaces[id].link)
			}
			ts := uint64(bo.Uint32(body[4:]))<<32 | uint64(bo.Uint32(body[8:]))
			capLen := int(bo.Uint32(body[12:]))
			if 20+capLen > len(body) {
				return nil, fmt.Errorf("packet of %d bytes in a block of %d", capLen, n)
			}
			if p, ok := decodeFrame(body[20 : 20+capLen]); ok {
				p.t = ifaces[id].unit(ts)
				out = append(out, p)
			}
		}
		off += n
	}
	return out, nil
}

// decodeFrame reads an Ethernet frame's IPv4 TCP headers (false for
// anything else, or a fragment).
func decodeFrame(f []byte) (tdPacket, bool) {
	var p tdPacket
	if len(f) < 14 {
		return p, false
	}
	typ, ip := binary.BigEndian.Uint16(f[12:]), f[14:]
	if typ == 0x8100 && len(f) >= 18 { // one VLAN tag
		typ, ip = binary.BigEndian.Uint16(f[16:]), f[18:]
	}
	if typ != 0x0800 || len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != 6 || binary.BigEndian.Uint16(ip[6:])&0x1fff != 0 {
		return p, false
	}
	ihl, total := int(ip[0]&0x0f)*4, int(binary.BigEndian.Uint16(ip[2:]))
	if len(ip) < ihl+20 {
		return p, false
	}
	tcp := ip[ihl:]
	doff := int(tcp[12]>>4) * 4
	src, dst := netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	p.src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(tcp[0:]))
	p.dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(tcp[2:]))
	p.seq, p.flags, p.n = binary.BigEndian.Uint32(tcp[4:]), tcp[13], total-ihl-doff
	return p, p.n >= 0
}

// tdRequest is one request as tcpdump's captures take it apart; times in
// ms.
type tdRequest struct {
	legIn, legOut, wireOut, db, wireBack float64
	trips                                int
}

// tdBurst is a run of payload one way on a connection, in the order the
// app sent and received it: [seq, end) and its first packet's stamp.
type tdBurst struct {
	src, dst netip.AddrPort
	first    int64
	seq, end uint32
}

// dissect finds each request in the app's capture (a client→app burst
// and the app→client burst after it, on every connection to the app's
// port) and the round trips with the database (an app→db burst and the
// db→app burst after it); a round trip whose query left while a request
// was at the app is that request's. Each burst's last byte is timed
// where it first left and where it first arrived, each on its side's
// capture.
func dissect(caps map[string][]tdPacket, addrs map[string]netip.Addr, appPort, dbPort uint16) ([]tdRequest, error) {
	app := caps["app"]
	slices.SortStableFunc(app, func(a, b tdPacket) int { return int(min(max(a.t-b.t, -1), 1)) })
	appEnd, dbEnd := netip.AddrPortFrom(addrs["app"], appPort), netip.AddrPortFrom(addrs["db"], dbPort)
	var reqs, trips [][2]tdBurst
	for _, conv := range []struct {
		server netip.AddrPort
		peer   netip.Addr
		out    *[][2]tdBurst
	}{{appEnd, addrs["client"], &reqs}, {dbEnd, addrs["app"], &trips}} {
		conns := map[netip.AddrPort][]tdBurst{} // by the client end
		for _, p := range app {
			var peerEnd netip.AddrPort
			switch {
			case p.dst == conv.server && p.src.Addr() == conv.peer:
				peerEnd = p.src
			case p.src == conv.server && p.dst.Addr() == conv.peer:
				peerEnd = p.dst
			default:
				continue
			}
			if p.n == 0 {
				continue
			}
			bs := conns[peerEnd]
			end := p.seq + uint32(p.n)
			if len(bs) == 0 || bs[len(bs)-1].src != p.src {
				conns[peerEnd] = append(bs, tdBurst{src: p.src, dst: p.dst, first: p.t, seq: p.seq, end: end})
				continue
			}
			if b := &bs[len(bs)-1]; int32(end-b.end) > 0 {
				b.end = end
			}
		}
		for _, bs := range conns {
			for i := 0; i+1 < len(bs); i++ {
				if bs[i].dst == conv.server { // the peer's end asked, the server answered
					*conv.out = append(*conv.out, [2]tdBurst{bs[i], bs[i+1]})
					i++
				}
			}
		}
		slices.SortFunc(*conv.out, func(a, b [2]tdBurst) int { return int(min(max(a[0].first-b[0].first, -1), 1)) })
	}
	// A byte's first send and first arrival.
	at := func(role string, b tdBurst) (int64, error) {
		last := b.end - 1
		for _, p := range caps[role] {
			if p.src == b.src && p.dst == b.dst && p.n > 0 && int32(last-p.seq) >= 0 && int32(p.seq+uint32(p.n)-last) > 0 {
				return p.t, nil
			}
		}
		return 0, fmt.Errorf("%s → %s: byte %d not in the %s's capture", b.src, b.dst, last, role)
	}
	for role := range caps {
		slices.SortStableFunc(caps[role], func(a, b tdPacket) int { return int(min(max(a.t-b.t, -1), 1)) })
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	// times is when each of four bursts was seen by the capture of its
	// role.
	type sighting struct {
		role string
		b    tdBurst
	}
	times := func(s [4]sighting) (ev [4]int64, err error) {
		for k, x := range s {
			if ev[k], err = at(x.role, x.b); err != nil {
				return ev, err
			}
		}
		return ev, nil
	}
	out := make([]tdRequest, len(reqs))
	used := make([]bool, len(trips))
	for i, rq := range reqs {
		ev, err := times([4]sighting{{"client", rq[0]}, {"app", rq[0]}, {"app", rq[1]}, {"client", rq[1]}})
		if err != nil {
			return nil, fmt.Errorf("request %d of %d: %w", i, len(reqs), err)
		}
		clReq, appReq, appResp, clResp := ev[0], ev[1], ev[2], ev[3]
		r := tdRequest{legIn: ms(appReq - clReq), legOut: ms(clResp - appResp)}
		for j, tr := range trips {
			if used[j] || tr[0].first < appReq || tr[0].first > appResp {
				continue
			}
			used[j] = true
			ev, err := times([4]sighting{{"app", tr[0]}, {"db", tr[0]}, {"db", tr[1]}, {"app", tr[1]}})
			if err != nil {
				return nil, fmt.Errorf("request %d of %d, a round trip: %w", i, len(reqs), err)
			}
			r.wireOut += ms(ev[1] - ev[0])
			r.db += ms(ev[2] - ev[1])
			r.wireBack += ms(ev[3] - ev[2])
			r.trips++
		}
		out[i] = r
	}
	return out, nil
}

// tdParts are the parts the check compares, in its figures' order.
var tdParts = []string{"leg_in", "leg_out", "wire_out", "db", "wire_back"}

func (r tdRequest) parts() []float64 {
	return []float64{r.legIn, r.legOut, r.wireOut, r.db, r.wireBack}
}

func anatomyParts(a workloads.RequestAnatomy) []float64 {
	return []float64{a.LegInMs, a.LegOutMs, a.WireOutMs, a.DBMs, a.WireBackMs}
}

// agreement is how tcpdump's figures of a task's requests compare with
// rttlab's: the differences (tcpdump's less rttlab's) per part, and the
// requests whose count of round trips differs.
type agreement struct {
	n     int
	diffs [][]float64 // by part, in tdParts' order
	trips int
}

// compareAnatomy compares each request rttlab took apart (by its place
// in the load run) with tcpdump's.
func compareAnatomy(mine []tdRequest, rows map[int]workloads.RequestAnatomy) agreement {
	ag := agreement{diffs: make([][]float64, len(tdParts))}
	for seq, a := range rows {
		if seq < 0 || seq >= len(mine) {
			continue
		}
		ag.n++
		if a.RoundTrips != mine[seq].trips {
			ag.trips++
		}
		theirs := anatomyParts(a)
		for k, v := range mine[seq].parts() {
			ag.diffs[k] = append(ag.diffs[k], v-theirs[k])
		}
	}
	return ag
}

// share is the share of a part's differences within tol ms; median its
// median absolute difference.
func (ag agreement) share(k int, tol float64) float64 {
	in := 0
	for _, d := range ag.diffs[k] {
		if math.Abs(d) <= tol+1e-9 {
			in++
		}
	}
	if len(ag.diffs[k]) == 0 {
		return 0
	}
	return float64(in) / float64(len(ag.diffs[k]))
}

// median is the median of a part's differences, absolute or signed.
func (ag agreement) median(k int, absolute bool) float64 {
	d := slices.Clone(ag.diffs[k])
	if absolute {
		for i := range d {
			d[i] = math.Abs(d[i])
		}
	}
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	if len(d)%2 == 1 {
		return d[len(d)/2]
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2
}

func (ag agreement) lines() []string {
	var out []string
	for k, name := range tdParts {
		largest := 0.0
		for _, d := range ag.diffs[k] {
			largest = max(largest, math.Abs(d))
		}
		out = append(out, fmt.Sprintf("%-9s %5.1f%% within %.2f ms, median |diff| %.4f ms (signed, tcpdump's less rttlab's: %+.4f), max |diff| %.4f ms",
			name, 100*ag.share(k, tcpdumpAgreeMs), tcpdumpAgreeMs, ag.median(k, true), ag.median(k, false), largest))
	}
	return out
}

// failures says which parts agree for less than share of the requests
// (none compared is a failure too).
func (ag agreement) failures(tol, share float64) []string {
	if ag.n == 0 {
		return []string{"no request to compare"}
	}
	var out []string
	for k, name := range tdParts {
		if s := ag.share(k, tol); s < share {
			out = append(out, fmt.Sprintf("%s: tcpdump and the anatomy agree within %.2f ms for %.1f%% of %d requests, want %.0f%%", name, tol, 100*s, ag.n, 100*share))
		}
	}
	return out
}

// The check itself, on a capture written here: one request with one
// round trip, read back as pcap (ns) and pcapng; it agrees with the
// anatomy it was written from and fails once a part is 0.1 ms off.
func TestTcpdumpCheckCanFail(t *testing.T) {
	cl, ap, db := netip.MustParseAddr("10.9.0.4"), netip.MustParseAddr("10.9.0.3"), netip.MustParseAddr("10.9.0.2")
	addrs := map[string]netip.Addr{"client": cl, "app": ap, "db": db}
	c, a, q := netip.AddrPortFrom(cl, 40000), netip.AddrPortFrom(ap, 8080), netip.AddrPortFrom(ap, 41000)
	d := netip.AddrPortFrom(db, 5432)
	ms := func(x float64) int64 { return 1_700_000_000_000_000_000 + int64(x*1e6) }
	seg := func(t float64, src, dst netip.AddrPort, seq uint32, n int) tdPacket {
		return tdPacket{t: ms(t), src: src, dst: dst, seq: seq, n: n, flags: 0x18}
	}
	req, resp := seg(0, c, a, 100, 80), seg(0, a, c, 500, 300)
	qry, ans := seg(0, q, d, 900, 60), seg(0, d, q, 7000, 120)
	caps := map[string][]tdPacket{
		"client": {stamped(req, 0), stamped(resp, 5.3)},
		"app":    {stamped(req, 0.2), stamped(qry, 0.5), stamped(ans, 2.9), stamped(resp, 3.1)},
		"db":     {stamped(qry, 1.1), stamped(ans, 2.2)},
	}
	want := workloads.RequestAnatomy{LegInMs: 0.2, LegOutMs: 2.2, WireOutMs: 0.6, DBMs: 1.1, WireBackMs: 0.7, RoundTrips: 1}
	for _, format := range []string{"pcap", "pcapng"} {
		read := map[string][]tdPacket{}
		for role, ps := range caps {
			var err error
			if read[role], err = readCapture(writeCapture(format, ps)); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
		mine, err := dissect(read, addrs, 8080, 5432)
		if err != nil || len(mine) != 1 {
			t.Fatalf("%s: %d requests, %v", format, len(mine), err)
		}
		if f := compareAnatomy(mine, map[int]workloads.RequestAnatomy{0: want}).failures(tcpdumpAgreeMs, tcpdumpAgreeShare); len(f) != 0 {
			t.Errorf("%s: %v", format, f)
		}
		off := want
		off.DBMs += 0.1
		if f := compareAnatomy(mine, map[int]workloads.RequestAnatomy{0: off}).failures(tcpdumpAgreeMs, tcpdumpAgreeShare); len(f) != 1 || !strings.HasPrefix(f[0], "db:") {
			t.Errorf("%s: the database's time 0.1 ms off: %v", format, f)
		}
	}
}

// stamped is p stamped ms milliseconds after its own stamp.
func stamped(p tdPacket, ms float64) tdPacket {
	p.t += int64(ms * 1e6)
	return p
}

// writeCapture writes packets as Ethernet frames in a pcap file (ns) or
// a pcapng file (ns resolution).
func writeCapture(format string, ps []tdPacket) []byte {
	le := binary.LittleEndian
	frame := func(p tdPacket) []byte {
		f := make([]byte, 14+20+20)
		binary.BigEndian.PutUint16(f[12:], 0x0800)
		ip := f[14:]
		ip[0], ip[9] = 0x45, 6
		binary.BigEndian.PutUint16(ip[2:], uint16(40+p.n))
		s, d := p.src.Addr().As4(), p.dst.Addr().As4()
		copy(ip[12:], s[:])
		copy(ip[16:], d[:])
		tcp := ip[20:]
		binary.BigEndian.PutUint16(tcp[0:], p.src.Port())
		binary.BigEndian.PutUint16(tcp[2:], p.dst.Port())
		binary.BigEndian.PutUint32(tcp[4:], p.seq)
		tcp[12], tcp[13] = 5<<4, p.flags
		return f // the payload is not captured (a short snap length)
	}
	var b []byte
	if format == "pcap" {
		b = le.AppendUint32(b, 0xa1b23c4d)
		b = le.AppendUint16(b, 2)
		b = le.AppendUint16(b, 4)
		b = append(b, make([]byte, 8)...)
		b = le.AppendUint32(b, 200)
		b = le.AppendUint32(b, 1)
		for _, p := range ps {
			f := frame(p)
			b = le.AppendUint32(b, uint32(p.t/1e9))
			b = le.AppendUint32(b, uint32(p.t%1e9))
			b = le.AppendUint32(b, uint32(len(f)))
			b = le.AppendUint32(b, uint32(len(f)+p.n))
			b = append(b, f...)
		}
		return b
	}
	block := func(typ uint32, body []byte) {
		n := uint32(12 + len(body))
		b = le.AppendUint32(b, typ)
		b = le.AppendUint32(b, n)
		b = append(b, body...)
		b = le.AppendUint32(b, n)
	}
	shb := le.AppendUint32(nil, 0x1a2b3c4d)
	shb = le.AppendUint16(shb, 1)
	shb = le.AppendUint16(shb, 0)
	shb = le.AppendUint64(shb, ^uint64(0))
	block(0x0a0d0d0a, shb)
	idb := le.AppendUint16(nil, 1)
	idb = le.AppendUint16(idb, 0)
	idb = le.AppendUint32(idb, 200)
	idb = le.AppendUint16(idb, 9) // if_tsresol: 10^-9
	idb = le.AppendUint16(idb, 1)
	idb = append(idb, 9, 0, 0, 0)
	idb = append(idb, 0, 0, 0, 0) // opt_endofopt
	block(1, idb)
	for _, p := range ps {
		f := frame(p)
		for len(f)%4 != 0 {
			f = append(f, 0)
		}
		epb := le.AppendUint32(nil, 0)
		epb = le.AppendUint32(epb, uint32(uint64(p.t)>>32))
		epb = le.AppendUint32(epb, uint32(uint64(p.t)))
		epb = le.AppendUint32(epb, 54)
		epb = le.AppendUint32(epb, uint32(54+p.n))
		block(6, append(epb, f...))
	}
	return b
}
