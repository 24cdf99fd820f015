package netem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// iptRule is one mangle POSTROUTING rule: the binary (iptables or
// ip6tables) and the rule specification after the chain name.
type iptRule struct {
	bin  string
	spec string // space-separated; no element contains spaces
}

// userspace is the NFQUEUE shaper: mangle POSTROUTING rules (without
// --queue-bypass) send egress to a queue; one OS-locked thread holds each
// packet until its receipt time + delay, in FIFO order, then accepts it.
type userspace struct {
	opts Options
	sock *nfqSocket
	wake int // eventfd that interrupts the loop's ppoll

	delay atomic.Int64 // ns, read by the loop for each new packet
	stop  atomic.Bool
	done  chan struct{}
	ready chan string // the loop's thread setup, sent once it runs
	errMu sync.Mutex
	err   error // why the loop stopped, nil while it runs or after Close

	detail string // how the loop thread runs, for Info

	statsMu sync.Mutex
	stats   lateRing

	mu     sync.Mutex
	rules  []iptRule
	closed bool
}

func newUserspace(ctx context.Context, opts Options) (*userspace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, bin := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("userspace shaper: %s not found in PATH: install the iptables package", bin)
		}
	}
	u := &userspace{opts: opts, done: make(chan struct{})}
	// A shaper killed with SIGKILL leaves its rules behind (and traffic
	// stopped): remove rules with this queue's comment before binding.
	if err := u.sweep(); err != nil {
		return nil, err
	}
	err := inNetNS(opts.NetNS, func() error {
		s, err := openNFQueue(opts.QueueNum, queueMaxLen)
		u.sock = s
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
	u.ready = make(chan string, 1)
	go u.run()
	select {
	case detail := <-u.ready:
		u.detail = detail
	case <-u.done:
		err := u.Err()
		u.sock.Close()
		unix.Close(u.wake)
		return nil, fmt.Errorf("userspace shaper: %w", err)
	}
	return u, nil
}

func (u *userspace) Backend() string { return BackendUserspace }

// Stats reports how late the loop released packets against their due time
// (receipt + delay), over the most recent batches.
func (u *userspace) Stats() Stats {
	u.statsMu.Lock()
	defer u.statsMu.Unlock()
	return u.stats.summary()
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

func (u *userspace) comment() string { return "rttlab-" + strconv.Itoa(int(u.opts.QueueNum)) }

// rulesFor lists the rules that apply c.
func (u *userspace) rulesFor(c Config) []iptRule {
	tail := fmt.Sprintf("-m comment --comment %s -j NFQUEUE --queue-num %d", u.comment(), u.opts.QueueNum)
	if len(c.Peers) == 0 {
		return []iptRule{
			{"iptables", "-o " + u.opts.Link + " " + tail},
			{"ip6tables", "-o " + u.opts.Link + " " + tail},
		}
	}
	var out []iptRule
	for _, p := range c.Peers {
		p = p.Unmap()
		r := iptRule{"iptables", "-d " + p.String() + "/32 " + tail}
		if p.Is6() {
			r = iptRule{"ip6tables", "-d " + p.String() + "/128 " + tail}
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
	prevDelay := u.delay.Swap(int64(c.Delay))
	// Add the new rules first, then remove the old ones, so that no packet
	// slips through unshaped while the scope changes.
	var added []iptRule
	for _, r := range want {
		if slices.Contains(u.rules, r) {
			continue
		}
		if err := u.ipt(r.bin, "-I", r.spec); err != nil {
			for _, a := range added {
				_ = u.ipt(a.bin, "-D", a.spec)
			}
			u.delay.Store(prevDelay)
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
		if err := u.ipt(r.bin, "-D", r.spec); err != nil {
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
		if err := u.ipt(r.bin, "-D", r.spec); err != nil {
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
	u.stop.Store(true)
	_, _ = unix.Write(u.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	<-u.done
	if cerr := u.sock.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close NFQUEUE socket: %w", cerr))
	}
	_ = unix.Close(u.wake)
	return err
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
	u.stop.Store(true)
	_, _ = unix.Write(u.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	<-u.done
	err := u.sock.Close()
	_ = unix.Close(u.wake)
	return err
}

// ipt runs "bin -w -t mangle OP POSTROUTING spec" in the shaper's namespace.
func (u *userspace) ipt(bin, op, spec string) error {
	args := append([]string{"-w", "-t", "mangle", op, "POSTROUTING"}, strings.Fields(spec)...)
	_, err := u.iptOutput(bin, args...)
	return err
}

func (u *userspace) iptOutput(bin string, args ...string) (string, error) {
	var out []byte
	err := inNetNS(u.opts.NetNS, func() error {
		var err error
		out, err = exec.Command(bin, args...).CombinedOutput()
		return err
	})
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

// sweep deletes mangle POSTROUTING rules that carry this queue's comment.
func (u *userspace) sweep() error {
	for _, bin := range []string{"iptables", "ip6tables"} {
		out, err := u.iptOutput(bin, "-w", "-t", "mangle", "-S", "POSTROUTING")
		if err != nil {
			return fmt.Errorf("userspace shaper: %w", err)
		}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || f[0] != "-A" || !hasComment(f, u.comment()) {
				continue
			}
			if err := u.ipt(bin, "-D", strings.Join(f[2:], " ")); err != nil {
				return fmt.Errorf("userspace shaper: remove stale rule: %w", err)
			}
			slog.Info("removed stale shaping rule", "rule", line)
		}
	}
	return nil
}

func hasComment(fields []string, comment string) bool {
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] == "--comment" && strings.Trim(fields[i+1], `"`) == comment {
			return true
		}
	}
	return false
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

// loop is the packet loop. It runs on one OS thread with 1ns timer slack:
// it sleeps in ppoll on the queue socket (and the wake eventfd) until
// spinWindow before the oldest packet's due time, then spins until that
// time while still reading the socket, and accepts every due packet with
// one batch verdict. Packets are stamped with the monotonic clock when
// read; each gets the delay current at that moment; they leave in FIFO
// order.
func (u *userspace) loop() error {
	// The thread is never unlocked: its timer slack is changed, so the
	// runtime discards it when this goroutine ends.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set timer slack: %w", err)
	}
	u.ready <- fmt.Sprintf("one OS-locked loop thread, timer slack 1ns, adaptive spin window from %v", initialSpin)
	q := newDueQueue(4096)
	var nlErrs, overflows int
	onPacket := func(id uint32) { q.Push(id, mono()+u.delay.Load()) }
	onError := func(e nlError) {
		switch {
		case e.errno == unix.ENOBUFS:
			overflows++
			if overflows == 1 || overflows%1000 == 0 {
				slog.Warn("NFQUEUE socket overflowed: the kernel dropped packets", "queue", u.opts.QueueNum, "times", overflows)
			}
		case e.errno != 0:
			nlErrs++
			if nlErrs == 1 || nlErrs%1000 == 0 {
				slog.Warn("kernel refused a verdict", "queue", u.opts.QueueNum, "err", e.errno, "times", nlErrs)
			}
		}
	}
	fds := []unix.PollFd{
		{Fd: int32(u.sock.fd), Events: unix.POLLIN},
		{Fd: int32(u.wake), Events: unix.POLLIN},
	}
	lateness := newLateness()
	var ts unix.Timespec
	for {
		if u.stop.Load() {
			if id, n := q.PopAll(); n > 0 {
				return u.sock.verdictBatch(id, nfAccept)
			}
			return nil
		}
		now := mono()
		_, headDue, _ := q.Peek()
		if id, n := q.PopDue(now); n > 0 {
			if err := u.sock.verdictBatch(id, nfAccept); err != nil {
				return err
			}
			u.statsMu.Lock()
			u.stats.add(now-headDue, n)
			u.statsMu.Unlock()
		}
		tsp := (*unix.Timespec)(nil)
		if _, due, ok := q.Peek(); ok {
			wait := due - now - lateness.window()
			if wait <= 0 {
				for mono() < due && !u.stop.Load() {
					if _, err := u.sock.drain(onPacket, onError); err != nil {
						return err
					}
				}
				continue
			}
			ts = unix.NsecToTimespec(wait)
			tsp = &ts
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		n, err := unix.Ppoll(fds, tsp, nil)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("wait on NFQUEUE %d: %w", u.opts.QueueNum, err)
		}
		if n == 0 && err == nil && tsp != nil {
			// Timed out: learn how late the timer woke us.
			lateness.observe(mono() - (now + ts.Nano()))
		}
		if fds[0].Revents != 0 {
			if _, err := u.sock.drain(onPacket, onError); err != nil {
				return err
			}
		}
		if fds[1].Revents != 0 {
			var b [8]byte
			_, _ = unix.Read(u.wake, b[:])
		}
	}
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
func (l *lateness) window() int64 { return l.est + int64(10*time.Microsecond) }

// Stats summarizes the userspace shaper's release lateness: how long after
// its due time (receipt + delay) the loop accepted a packet, measured on the
// oldest packet of each verdict batch over the last lateWindow batches. It
// isolates the shaper's own precision from wake-up effects elsewhere.
type Stats struct {
	Packets  uint64 `json:"packets"`
	Batches  uint64 `json:"batches"`
	LateP50  int64  `json:"late_p50_ns"`
	LateP90  int64  `json:"late_p90_ns"`
	LateP99  int64  `json:"late_p99_ns"`
	LateMax  int64  `json:"late_max_ns"`
	Measured int    `json:"measured_batches"`
}

// StatsReporter is an optional add-on of a Shaper that measures itself.
type StatsReporter interface {
	Stats() Stats
}

const lateWindow = 4096

type lateRing struct {
	packets, batches uint64
	late             [lateWindow]int64
}

func (r *lateRing) add(late int64, n int) {
	r.late[r.batches%lateWindow] = late
	r.batches++
	r.packets += uint64(n)
}

func (r *lateRing) summary() Stats {
	st := Stats{Packets: r.packets, Batches: r.batches}
	n := int(min(r.batches, lateWindow))
	if n == 0 {
		return st
	}
	v := slices.Clone(r.late[:n])
	slices.Sort(v)
	q := func(f float64) int64 { return v[int(f*float64(n-1))] }
	st.LateP50, st.LateP90, st.LateP99, st.LateMax, st.Measured = q(0.5), q(0.9), q(0.99), v[n-1], n
	return st
}
