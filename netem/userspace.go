package netem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Tuning of the userspace shaper's packet loop.
const (
	// The loop sleeps in ppoll until a spin window before the next due
	// time, then spins (reading the socket without blocking) until the due
	// time. The window covers ppoll's timer wake-up lateness, which the loop
	// measures on every timed sleep: measured here (2-core Firecracker VM,
	// 1ns timer slack) it is ~50-60µs at the median and ~160µs at p90
	// under load. The window tracks a high quantile of that lateness,
	// clamped to [minSpin, maxSpin]; initialSpin is the starting estimate.
	initialSpin = 80 * time.Microsecond
	minSpin     = 20 * time.Microsecond
	maxSpin     = 400 * time.Microsecond
	// queueMaxLen: packets the kernel may hold for the queue; MaxDelay x
	// 100k packets/s, like the kernel shaper's netem limit.
	queueMaxLen = uint32(MaxDelay/time.Second) * 100_000
)

// monoBase anchors mono(); time.Since on it reads the monotonic clock
// through the vDSO (CLOCK_MONOTONIC), without a system call.
var monoBase = time.Now()

func mono() int64 { return int64(time.Since(monoBase)) }

// iptRule is one mangle rule: the binary (iptables or ip6tables), the
// chain (PREROUTING or POSTROUTING) and the rule specification after the
// chain name.
type iptRule struct {
	bin   string
	chain string
	spec  string // space-separated; no element contains spaces
}

// userspace is the NFQUEUE shaper. Mangle rules (without --queue-bypass)
// send the shaped packets to a queue: with the wire hook (the default)
// the packets a namespace sends, caught on the run's bridge in the host's
// namespace before the receiver's kernel sees them; on ingress
// (PREROUTING in the namespace) the packets that arrive from the peers;
// on egress (POSTROUTING) the packets sent to them. One OS-locked thread holds each
// packet until its arrival time + delay, in FIFO order per peer, then accepts it.
// On ingress the arrival time is the kernel's receive stamp (NFQA_TIMESTAMP),
// so the time the packet waited in the queue before the shaper read it is
// part of the hold, not added to it.
type userspace struct {
	opts Options
	sock *nfqSocket
	wake int // eventfd that interrupts the loop's ppoll
	tsFD int // a socket with SO_TIMESTAMPNS, which makes the kernel stamp received packets

	table atomic.Pointer[delayTable] // read by the loop for each new packet
	stop  atomic.Bool
	done  chan struct{}
	ready chan string // the loop's thread setup, sent once it runs
	errMu sync.Mutex
	err   error // why the loop stopped, nil while it runs or after Close

	detail string // how the loop thread runs, for Info

	statsMu sync.Mutex
	stats   loopStats

	mu     sync.Mutex
	rules  []iptRule
	closed bool
}

func newUserspace(ctx context.Context, opts Options) (*userspace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts, err := userspaceOptions(opts)
	if err != nil {
		return nil, err
	}
	u := &userspace{opts: opts, done: make(chan struct{}), tsFD: -1}
	u.table.Store(&delayTable{})
	u.stats.init()
	// A shaper killed with SIGKILL leaves its rules behind (and traffic
	// stopped): remove rules with this shaper's comment before binding.
	if err := u.sweep(); err != nil {
		return nil, err
	}
	err = inNetNS(u.ns(), func() error {
		s, q, err := bindQueue(opts)
		u.sock, u.opts.QueueNum = s, q
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("userspace shaper: %w", err)
	}
	u.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		u.sock.Close()
		return nil, fmt.Errorf("userspace shaper: eventfd: %w", err)
	}
	stampNote := u.requestStamps()
	u.ready = make(chan string, 1)
	go u.run()
	select {
	case detail := <-u.ready:
		u.detail = fmt.Sprintf("hook %s; %s; %s", opts.Hook, detail, stampNote)
		if opts.Hook == HookWire {
			u.detail = fmt.Sprintf("hook wire: holds what %s sends on bridge %s before the receiver sees it; %s; %s", opts.Src, opts.Bridge, detail, stampNote)
		}
		if opts.Hook == HookEgress {
			u.detail = fmt.Sprintf("hook egress; %s; holds count from the read (the kernel stamps no packet queued at POSTROUTING)", detail)
		}
	case <-u.done:
		err := u.Err()
		u.sock.Close()
		unix.Close(u.wake)
		if u.tsFD >= 0 {
			unix.Close(u.tsFD)
		}
		return nil, fmt.Errorf("userspace shaper: %w", err)
	}
	return u, nil
}

// userspaceOptions checks the hook (ingress when none is given) and that
// iptables is there to queue packets.
func userspaceOptions(opts Options) (Options, error) {
	switch opts.Hook {
	case "":
		opts.Hook = HookIngress
	case HookIngress, HookEgress:
	case HookWire:
		if opts.Bridge == BridgeAuto {
			b, err := bridgeTo(opts.Src)
			if err != nil {
				return opts, fmt.Errorf("userspace shaper: %w", err)
			}
			opts.Bridge = b
		}
		if err := checkWire(opts); err != nil {
			return opts, fmt.Errorf("userspace shaper: %w", err)
		}
	default:
		return opts, fmt.Errorf("userspace shaper: hook %q: use wire, ingress or egress", opts.Hook)
	}
	for _, bin := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(bin); err != nil {
			return opts, fmt.Errorf("userspace shaper: %s not found in PATH: install the iptables package", bin)
		}
	}
	return opts, nil
}

// requestStamps asks the kernel for receive stamps and says how holds are
// counted. The kernel stamps received packets (skb->tstamp, which NFQUEUE
// passes on as NFQA_TIMESTAMP for packets queued up to FORWARD) only while
// some socket on the host asks for receive timestamps. This one does, for
// as long as the shaper lives; it never receives anything.
func (u *userspace) requestStamps() string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Sprintf("no kernel receive stamps (socket: %v): holds count from the read", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		unix.Close(fd)
		return fmt.Sprintf("no kernel receive stamps (SO_TIMESTAMPNS: %v): holds count from the read", err)
	}
	u.tsFD = fd
	return "kernel receive stamps requested"
}

func (u *userspace) Backend() string { return BackendUserspace }

// Hook says where the shaper holds packets: wire, ingress or egress.
func (u *userspace) Hook() string { return u.opts.Hook }

// Stats reports what the shaper did since it started: packets, drops,
// per-packet realized hold, release lateness and read lag, CPU time.
func (u *userspace) Stats() Stats {
	u.statsMu.Lock()
	st := u.stats.snapshot()
	u.statsMu.Unlock()
	st.Hook = u.opts.Hook
	st.DelayNs = u.table.Load().def
	st.CPUNs = processCPU()
	if qd, ud, ok := u.kernelDrops(); ok {
		st.QueueDropped, st.UserDropped = qd, ud
	}
	return st
}

// kernelDrops reads this queue's drop counters from
// /proc/net/netfilter/nfnetlink_queue in the shaper's namespace: packets
// dropped because the queue was full, and packets the kernel could not
// hand to the socket.
func (u *userspace) kernelDrops() (queueDropped, userDropped uint64, ok bool) {
	_ = inNetNS(u.ns(), func() error {
		path := "/proc/self/net/netfilter/nfnetlink_queue"
		if u.ns() != "" {
			path = "/proc/thread-self/net/netfilter/nfnetlink_queue"
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		queueDropped, userDropped, ok = parseQueueProc(string(data), u.opts.QueueNum)
		return nil
	})
	return
}

// parseQueueProc finds queue's line in /proc/net/netfilter/nfnetlink_queue
// ("queue portid total copy_mode copy_range queue_dropped user_dropped
// id_sequence 1") and returns its two drop counters.
func parseQueueProc(data string, queue uint16) (queueDropped, userDropped uint64, ok bool) {
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || f[0] != strconv.Itoa(int(queue)) {
			continue
		}
		qd, err1 := strconv.ParseUint(f[5], 10, 64)
		ud, err2 := strconv.ParseUint(f[6], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		return qd, ud, true
	}
	return 0, 0, false
}

// processCPU is the user + system CPU time of this process, in ns.
func processCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Done is closed when the packet loop stops.
func (u *userspace) Done() <-chan struct{} { return u.done }

// Err reports why the packet loop stopped, or nil while it runs.
func (u *userspace) Err() error {
	select {
	case <-u.done:
	default:
		return nil
	}
	u.errMu.Lock()
	defer u.errMu.Unlock()
	if u.err == nil && !u.stop.Load() {
		return errors.New("userspace shaper loop stopped")
	}
	return u.err
}

// comment names the shaper's rules: its queue inside a container's own
// namespace, its label on a shared bridge.
func (u *userspace) comment() string {
	if u.opts.Hook == HookWire {
		return wireComment(u.opts.Label)
	}
	return "rttlab-" + strconv.Itoa(int(u.opts.QueueNum))
}

// ns is the network namespace of the shaper's queue and rules: the
// caller's for the wire hook (on the bridge's host), else the shaped one.
func (u *userspace) ns() string {
	if u.opts.Hook == HookWire {
		return ""
	}
	return u.opts.NetNS
}

// link is the interface the shaper's rules match: the bridge for the
// wire hook, else the shaped link.
func (u *userspace) link() string {
	if u.opts.Hook == HookWire {
		return u.opts.Bridge
	}
	return u.opts.Link
}

// rulesFor lists the rules that apply c: on ingress the packets that come
// from the peers (or in on the link), on egress those sent to the peers
// (or out of the link). A zero delay still queues the packets, so that
// every setting, 0 included, pays the same cost of going through the
// shaper and a change against 0 ms is the delay alone.
func (u *userspace) rulesFor(c Config) []iptRule {
	if u.opts.Hook == HookWire {
		return u.wireRules(c)
	}
	chain, addr, dev := "PREROUTING", "-s", "-i"
	if u.opts.Hook == HookEgress {
		chain, addr, dev = "POSTROUTING", "-d", "-o"
	}
	tail := fmt.Sprintf("-m comment --comment %s -j NFQUEUE --queue-num %d", u.comment(), u.opts.QueueNum)
	if c.Scope() == "interface" {
		return []iptRule{
			{"iptables", chain, dev + " " + u.opts.Link + " " + tail},
			{"ip6tables", chain, dev + " " + u.opts.Link + " " + tail},
		}
	}
	var out []iptRule
	for _, e := range c.Entries() {
		p := e.Peer.Unmap()
		r := iptRule{"iptables", chain, addr + " " + p.String() + "/32 " + tail}
		if p.Is6() {
			r = iptRule{"ip6tables", chain, addr + " " + p.String() + "/128 " + tail}
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func (u *userspace) Set(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	c = c.Effective() // the loop holds floor + delay
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := u.Err(); err != nil {
		return fmt.Errorf("userspace shaper is not running: %w", err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return errors.New("userspace shaper is closed")
	}
	want := u.rulesFor(c)
	prevTable := u.table.Swap(newDelayTable(c))
	// Add the new rules first, then remove the old ones, so that no packet
	// slips through unshaped while the scope changes.
	var added []iptRule
	for _, r := range want {
		if slices.Contains(u.rules, r) {
			continue
		}
		if err := u.ipt(r, "-I"); err != nil {
			for _, a := range added {
				_ = u.ipt(a, "-D")
			}
			u.table.Store(prevTable)
			return err
		}
		added = append(added, r)
	}
	var kept []iptRule
	var firstErr error
	for _, r := range u.rules {
		if slices.Contains(want, r) {
			continue
		}
		if err := u.ipt(r, "-D"); err != nil {
			kept = append(kept, r)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	u.rules = append(want, kept...)
	return firstErr
}

func (u *userspace) Clear(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.clearLocked()
}

func (u *userspace) clearLocked() error {
	var kept []iptRule
	var errs []error
	for _, r := range u.rules {
		if err := u.ipt(r, "-D"); err != nil {
			kept = append(kept, r)
			errs = append(errs, err)
		}
	}
	u.rules = kept
	return errors.Join(errs...)
}

// Close removes the rules, releases every held packet, and closes the queue.
func (u *userspace) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil
	}
	u.closed = true
	err := u.clearLocked()
	u.stopLoop()
	if cerr := u.sock.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close NFQUEUE socket: %w", cerr))
	}
	return err
}

func (u *userspace) stopLoop() {
	u.stop.Store(true)
	_, _ = unix.Write(u.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	<-u.done
	_ = unix.Close(u.wake)
	if u.tsFD >= 0 {
		_ = unix.Close(u.tsFD)
		u.tsFD = -1
	}
}

// release closes the queue without removing the rules, so that traffic
// stays stopped (the kernel drops what it cannot queue) rather than passing
// unshaped. It is what the agent does when the packet loop has died.
func (u *userspace) release() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil
	}
	u.closed = true
	u.stopLoop()
	return u.sock.Close()
}

// ipt runs "bin -w -t mangle OP CHAIN spec" in the shaper's namespace.
func (u *userspace) ipt(r iptRule, op string) error {
	args := append([]string{"-w", "-t", "mangle", op, r.chain}, strings.Fields(r.spec)...)
	_, err := u.iptOutput(r.bin, args...)
	return err
}

func (u *userspace) iptOutput(bin string, args ...string) (string, error) {
	var out string
	err := inNetNS(u.ns(), func() error {
		var err error
		out, err = iptables(bin, args...)
		return err
	})
	return out, err
}

// iptables runs bin (iptables or ip6tables) with args in the calling
// thread's namespace; its error carries what the command said, and says
// that the shaper needs CAP_NET_ADMIN where it was refused for that.
func iptables(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		hint := ""
		if strings.Contains(msg, "Permission denied") || strings.Contains(msg, "must be root") {
			hint = ": the shaper needs CAP_NET_ADMIN"
		}
		return "", fmt.Errorf("%s %s: %w: %s%s", bin, strings.Join(args, " "), err, msg, hint)
	}
	return string(out), nil
}

// sweep deletes mangle PREROUTING and POSTROUTING rules that carry this
// shaper's comment.
func (u *userspace) sweep() error {
	_, err := sweepRules(u.ns(), func(f []string) bool { return ruleComment(f) == u.comment() }, false)
	if err != nil {
		return fmt.Errorf("userspace shaper: remove stale rules: %w", err)
	}
	return nil
}

func (u *userspace) run() {
	err := u.loop()
	if err != nil {
		slog.Error("userspace shaper stopped", "queue", u.opts.QueueNum, "err", err)
	}
	u.errMu.Lock()
	u.err = err
	u.errMu.Unlock()
	close(u.done)
}

// loop is the packet loop. It runs on one OS thread with 1ns timer slack.
// Each packet read from the queue is due at its arrival time + the delay
// current when it was read; its arrival time is the kernel's receive
// stamp when the packet carries one, else the time it was read. The loop
// sleeps in ppoll on the queue socket (and the wake eventfd) until a spin
// window before the oldest packet's due time, then spins until that time
// while still reading the socket, and accepts every due packet with one
// batch verdict. Packets of one peer leave in FIFO order; a packet due
// before an earlier one of another peer leaves first, with a verdict of
// its own (see lanes). With Options.Hot > 0 the
// loop keeps reading without sleeping (yielding the CPU between reads)
// for that long after the last packet, so a packet that arrives during a
// burst of traffic is read at once instead of after a wake-up.
func (u *userspace) loop() error {
	// The thread is never unlocked: its timer slack is changed, so the
	// runtime discards it when this goroutine ends.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set timer slack: %w", err)
	}
	l := newPacketLoop(u)
	detail := fmt.Sprintf("one OS-locked loop thread, timer slack 1ns, adaptive spin window from %v", initialSpin)
	if l.hot > 0 {
		detail += fmt.Sprintf(", reads without sleeping for %v after each packet", u.opts.Hot)
	}
	u.ready <- detail
	for {
		if u.stop.Load() {
			l.publish()
			if id, n := l.q.popAll(); n > 0 {
				return u.sock.verdictBatch(id, nfAccept)
			}
			return nil
		}
		now := mono()
		if err := l.releaseDue(now); err != nil {
			return err
		}
		tsp := (*unix.Timespec)(nil)
		if due, ok := l.q.peek(); ok {
			wait := due - now - l.lateness.window()
			if wait <= 0 {
				if err := l.spin(due); err != nil {
					return err
				}
				continue
			}
			l.ts = unix.NsecToTimespec(wait)
			tsp = &l.ts
		} else if l.hot > 0 && now-l.lastPkt < l.hot {
			if err := l.readHot(); err != nil {
				return err
			}
			continue
		}
		if err := l.wait(now, tsp); err != nil {
			return err
		}
	}
}

// packetLoop is the packet loop's state: the lanes of held packets, the
// counts gathered since the last publication, and the socket's reading.
type packetLoop struct {
	u        *userspace
	q        *lanes
	pend     *accounting // counts gathered between two publications
	lateness *lateness
	hot      int64
	realOff  int64 // CLOCK_REALTIME - mono(), refreshed before each read
	lastPkt  int64
	fds      []unix.PollFd
	ts       unix.Timespec
	// onPacket and onError are made once, so reading the socket
	// allocates no closure.
	onPacket func(pktInfo)
	onError  func(nlError)
}

func newPacketLoop(u *userspace) *packetLoop {
	l := &packetLoop{u: u, q: newLanes(), pend: newAccounting(), lateness: newLateness(), hot: int64(u.opts.Hot),
		fds: []unix.PollFd{
			{Fd: int32(u.sock.fd), Events: unix.POLLIN},
			{Fd: int32(u.wake), Events: unix.POLLIN},
		}}
	l.onPacket, l.onError = l.packet, l.sockError
	return l
}

// packet holds one packet read from the queue in its lane.
func (l *packetLoop) packet(p pktInfo) {
	l.lastPkt = mono()
	key, delay := l.u.table.Load().laneFor(p, l.u.opts.Hook)
	l.q.push(key, l.pend.arrive(p, l.lastPkt, l.realOff, delay))
}

// sockError counts what the kernel said went wrong, warning once per kind.
func (l *packetLoop) sockError(e nlError) {
	switch {
	case e.errno == unix.ENOBUFS:
		l.pend.Overruns++
		if l.pend.Overruns == 1 {
			slog.Warn("NFQUEUE socket overflowed: the kernel dropped packets", "queue", l.u.opts.QueueNum)
		}
	case e.errno != 0:
		l.pend.VerdictErrors++
		if l.pend.VerdictErrors == 1 {
			slog.Warn("kernel refused a verdict", "queue", l.u.opts.QueueNum, "err", e.errno)
		}
	}
}

// drain reads every packet the socket holds and returns how many.
func (l *packetLoop) drain() (int, error) {
	t := time.Now()
	l.realOff = t.UnixNano() - int64(t.Sub(monoBase))
	return l.u.sock.drain(l.onPacket, l.onError)
}

// publish adds the gathered counts to the statistics the agent reports.
func (l *packetLoop) publish() {
	l.u.statsMu.Lock()
	l.u.stats.add(&l.pend.pending)
	l.u.statsMu.Unlock()
	l.pend.reset()
}

// releaseDue accepts every packet due at now: one batch verdict, or one
// verdict each when a packet overtook an earlier one of another peer.
func (l *packetLoop) releaseDue(now int64) error {
	out, id, overtook := l.q.popDue(now)
	if len(out) == 0 {
		return nil
	}
	for _, h := range out {
		l.pend.release(h, now)
	}
	var err error
	if overtook == 0 {
		err = l.u.sock.verdictBatch(id, nfAccept)
	} else {
		l.pend.Overtook += uint64(overtook)
		err = l.u.sock.verdictEach(out, nfAccept)
	}
	if err != nil {
		return err
	}
	l.pend.verdict = append(l.pend.verdict, mono()-now)
	l.pend.Batches++
	l.publish()
	return nil
}

// spin reads the socket until due (or stop): a packet read while spinning
// may be due earlier (another peer's shorter delay).
func (l *packetLoop) spin(due int64) error {
	for mono() < due && !l.u.stop.Load() {
		n, err := l.drain()
		if err != nil {
			return err
		}
		if d, ok := l.q.peek(); n > 0 && ok {
			due = min(due, d)
		}
	}
	return nil
}

// readHot reads without sleeping, yielding the CPU when nothing came.
func (l *packetLoop) readHot() error {
	n, err := l.drain()
	if err != nil {
		return err
	}
	if n == 0 {
		_, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	return nil
}

// wait sleeps in ppoll on the socket and the wake eventfd until one is
// readable or tsp (nil: no timeout) passes, then reads what came; a
// timeout teaches the lateness estimate how late the timer woke.
func (l *packetLoop) wait(now int64, tsp *unix.Timespec) error {
	l.fds[0].Revents, l.fds[1].Revents = 0, 0
	n, err := unix.Ppoll(l.fds, tsp, nil)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("wait on NFQUEUE %d: %w", l.u.opts.QueueNum, err)
	}
	if n == 0 && err == nil && tsp != nil {
		l.lateness.observe(mono() - (now + tsp.Nano()))
	}
	if l.fds[0].Revents != 0 {
		if _, err := l.drain(); err != nil {
			return err
		}
	}
	if l.fds[1].Revents != 0 {
		var b [8]byte
		_, _ = unix.Read(l.u.wake, b[:])
	}
	return nil
}

// delayTable is the setting the loop applies: one delay, or one per peer.
// It is replaced whole (never changed) when the setting changes.
type delayTable struct {
	def    int64 // ns: the delay of interface scope and of single-delay path scope
	peers  []netip.Addr
	delays []int64
}

func newDelayTable(c Config) *delayTable {
	t := &delayTable{def: int64(c.Delay)}
	if len(c.PeerDelays) > 0 {
		t.def = 0
		for _, e := range c.PeerDelays {
			t.peers = append(t.peers, e.Peer.Unmap())
			t.delays = append(t.delays, int64(e.Delay))
			t.def = max(t.def, int64(e.Delay))
		}
	}
	return t
}

// laneFor returns the delay of a packet, its peer's (the source on
// ingress, the destination on egress) else the table's default, and the
// lane it is held in: the peer's address, or the zero address for the
// default.
func (t *delayTable) laneFor(p pktInfo, hook string) (netip.Addr, int64) {
	if len(t.peers) == 0 {
		return netip.Addr{}, t.def
	}
	peer := p.src
	if hook == HookEgress || hook == HookWire {
		peer = p.dst
	}
	peer = peer.Unmap()
	for i, a := range t.peers {
		if a == peer {
			return a, t.delays[i]
		}
	}
	return netip.Addr{}, t.def
}

// lateness tracks a high quantile (about p90) of how late ppoll's timer
// wakes the loop: it rises quickly on late wake-ups and decays slowly.
type lateness struct{ est int64 }

func newLateness() *lateness { return &lateness{est: int64(initialSpin)} }

func (l *lateness) observe(late int64) {
	// One outlier (a preempted vCPU) must not widen the window for long.
	late = min(late, 2*l.est+int64(50*time.Microsecond))
	if late > l.est {
		l.est += (late - l.est) / 8
	} else {
		l.est -= (l.est - late) / 64
	}
	l.est = min(max(l.est, int64(minSpin)), int64(maxSpin))
}

// window is how long before a due time the loop stops sleeping and spins.
func (l *lateness) window() int64 {
	return l.est + int64(10*time.Microsecond)
}
