// Package runtimefake is an in-memory runtime (runtime.Runtime) for the
// unit tests of code written against the runtime interface: it records
// the members started and removed, keeps their state, and answers execs
// with handlers a test registers per command prefix.
package runtimefake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rttlab/rttlab/orchestrator/internal/fakes"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// Runtime is an in-memory runtime. It keeps what the lab relies on:
//
//   - member names are unique;
//   - a member needs its image (AddImage, or EnsureImage of a Pullable
//     one), and a member beside another needs that one running;
//   - a member on the lab's network gets an address (10.90.0.N in start
//     order), one beside another shares its target's namespace and has
//     none of its own;
//   - Exec needs a running member and honours a cancelled context;
//     `rttlab agent session` runs each call it is sent as an exec of its
//     own, with the handlers of the verbs.
type Runtime struct {
	mu       sync.Mutex
	seq      int
	members  map[string]*Member // by ID
	images   map[string]bool
	handlers map[string]Handler
	// streams: command prefixes whose handlers read stdin as it comes
	// (Call.StdinR) instead of after it closed (Call.Stdin).
	streams map[string]bool
	faults  []*fault // armed by FailOn and FailTimes, in order
	crashes []*fault // armed by CrashOnStart
	started []runtime.MemberSpec
	removed []string
	execs   []Exec
	// Pullable are the images EnsureImage may pull.
	Pullable map[string]bool
	// Node is what the Node of every member that names none reads; empty
	// as on one host. A member that names a Node runs there.
	Node string
	// AddrOf, when set, gives the address of a member on the lab's
	// network (an empty answer: the next 10.90.0.N), so that a test's
	// server on 127.0.0.1 stands for a member.
	AddrOf func(s runtime.MemberSpec) string
	// PublishedAt, when set, is the host:port every published port of
	// every member answers on.
	PublishedAt string
	// Unhandled are the commands no handler answered.
	Unhandled []string
}

// Member is one member the fake holds.
type Member struct {
	runtime.Member
	Spec  runtime.MemberSpec
	State runtime.State
	Logs  string
	seq   int
}

// Exec is one exec the fake answered.
type Exec struct {
	Member string // name
	Cmd    []string
}

// Call is what an exec handler sees.
type Call struct {
	Member Member // a copy, as it was when the exec started
	Cmd    []string
	Env    []string
	User   string
	Stdin  []byte
	// StdinR is stdin unread, for handlers registered with HandleStream.
	StdinR io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Handler answers an Exec: what it writes to Stdout and Stderr, its exit
// code, and an error for a failure of the exec itself.
type Handler func(ctx context.Context, x *Call) (int, error)

var _ runtime.Runtime = (*Runtime)(nil)

// New returns an empty runtime.
func New() *Runtime {
	return &Runtime{
		members:  map[string]*Member{},
		images:   map[string]bool{},
		handlers: map[string]Handler{},
		streams:  map[string]bool{},
		Pullable: map[string]bool{},
	}
}

// AddImage makes ref present.
func (r *Runtime) AddImage(ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[ref] = true
}

// DropImage makes ref absent.
func (r *Runtime) DropImage(ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.images, ref)
}

// Handle registers h for commands starting with prefix (words separated
// by spaces). The longest matching prefix answers.
func (r *Runtime) Handle(prefix string, h Handler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers[prefix] = h
}

// HandleStream registers h as Handle does, for a command that reads its
// stdin as it comes (Call.StdinR) rather than once it closed.
func (r *Runtime) HandleStream(prefix string, h Handler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers[prefix] = h
	r.streams[prefix] = true
}

// fault is an armed failure: of op, for times more calls (< 0: every
// call), on a member whose name ends with match ("": any).
type fault struct {
	fakes.Armed
	err  error
	code int // CrashOnStart's exit code and logs
	logs string
}

// FailOn makes the next call of op (StartMember, StopMember,
// RemoveMember, State, Exec, ListMembers) on the member whose name ends
// with name ("": any) fail with err.
func (r *Runtime) FailOn(op, name string, err error) { r.FailTimes(op, name, 1, err) }

// FailTimes makes the next times calls of op (times < 0: every call) on
// a member whose name ends with match ("": any) fail with err; an Exec
// also matches when its command line contains match.
func (r *Runtime) FailTimes(op, match string, times int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, &fault{Armed: fakes.Armed{Op: op, Match: match, Times: times}, err: err})
}

// CrashOnStart makes the next times members whose name ends with match
// exit with code right after they start, having printed logs.
func (r *Runtime) CrashOnStart(match string, times, code int, logs string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.crashes = append(r.crashes, &fault{Armed: fakes.Armed{Match: match, Times: times}, code: code, logs: logs})
}

// Exit makes every running member whose name ends with name stop with
// code, having printed logs; it says whether one did.
func (r *Runtime) Exit(name string, code int, logs string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.members {
		if m.State.Running && strings.HasSuffix(m.Name, name) {
			m.State = runtime.State{ExitCode: code, Reason: "exited"}
			m.Logs += logs
			n++
		}
	}
	return n > 0
}

// Started returns the spec of every member started so far, in order.
func (r *Runtime) Started() []runtime.MemberSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]runtime.MemberSpec(nil), r.started...)
}

// Removed returns the names of the members removed so far, in order.
func (r *Runtime) Removed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.removed...)
}

// Execs returns every exec answered so far.
func (r *Runtime) Execs() []Exec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exec(nil), r.execs...)
}

// Live returns the names of the members that exist, in start order.
func (r *Runtime) Live() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.sortedLocked() {
		out = append(out, m.Name)
	}
	return out
}

func (r *Runtime) sortedLocked() []*Member {
	out := make([]*Member, 0, len(r.members))
	for _, m := range r.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

func (r *Runtime) byNameLocked(name string) *Member {
	for _, m := range r.members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// faultLocked returns and uses up the first failure armed for op on the
// member named name (for an Exec, or running cmd).
func (r *Runtime) faultLocked(op, name string, cmd ...string) error {
	if ft := takeLocked(r.faults, op, name, strings.Join(cmd, " ")); ft != nil {
		return ft.err
	}
	return nil
}

// takeLocked uses up the first armed fault of op matching name or, when
// given, the command line cmd.
func takeLocked(faults []*fault, op, name, cmd string) *fault {
	for _, ft := range faults {
		if ft.Fire(op, func(match string) bool {
			return match == "" || strings.HasSuffix(name, match) || (cmd != "" && strings.Contains(cmd, match))
		}) {
			return ft
		}
	}
	return nil
}

// StartMember starts a member of s.
func (r *Runtime) StartMember(ctx context.Context, s runtime.MemberSpec) (runtime.Member, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return runtime.Member{}, fmt.Errorf("start %s: %w", s.Name, err)
	}
	if r.byNameLocked(s.Name) != nil {
		return runtime.Member{}, fmt.Errorf("start %s: the name is in use", s.Name)
	}
	if !r.images[s.Image] {
		return runtime.Member{}, fmt.Errorf("start %s: image %s: %w", s.Name, s.Image, runtime.ErrNotFound)
	}
	if s.Beside != "" && !r.runningNetNSLocked(s.Beside) {
		return runtime.Member{}, fmt.Errorf("start %s: no running member owns network namespace %s", s.Name, s.Beside)
	}
	r.seq++
	id := fmt.Sprintf("fake-%d-%s", r.seq, s.Name)
	m := &Member{Spec: s, seq: r.seq}
	m.Spec.Labels = clone(s.Labels)
	m.Member = runtime.Member{Name: s.Name, Role: s.Role, ID: id, Node: r.Node, NetNS: s.Beside}
	if s.Node != "" {
		m.Node = s.Node
	}
	if m.NetNS == "" {
		m.NetNS = runtime.NetNS("netns-" + id)
		m.Addr = netip.AddrFrom4([4]byte{10, 90, 0, byte(r.seq % 250)}).String()
		if r.AddrOf != nil {
			if a := r.AddrOf(s); a != "" {
				m.Addr = a
			}
		}
	}
	if r.PublishedAt != "" && len(s.Publish) > 0 {
		m.Published = map[string]string{}
		for _, p := range s.Publish {
			m.Published[p] = r.PublishedAt
		}
	}
	r.members[id] = m
	r.started = append(r.started, m.Spec)
	if err := r.faultLocked("StartMember", s.Name); err != nil {
		m.State = runtime.State{Reason: "created"}
		return m.Member, err
	}
	m.State = runtime.State{Running: true, Reason: "running"}
	if c := takeLocked(r.crashes, "", s.Name, ""); c != nil {
		m.State = runtime.State{ExitCode: c.code, Reason: "exited"}
		m.Logs += c.logs
	}
	return m.Member, nil
}

var _ runtime.WireHost = (*Runtime)(nil)

// StartHostMember starts a member of s in the host's network namespace
// (runtime.OnHost, one for the whole runtime) or in an empty one of its
// own (runtime.NoNet); it has no address.
func (r *Runtime) StartHostMember(ctx context.Context, s runtime.MemberSpec, net runtime.HostNet) (runtime.Member, error) {
	s.Aliases, s.Beside = nil, ""
	m, err := r.StartMember(ctx, s)
	if m.ID == "" {
		return m, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	held := r.members[m.ID]
	held.Addr, held.NetNS = "", runtime.NetNS("host")
	if net == runtime.NoNet {
		held.NetNS = runtime.NetNS("none-" + m.ID)
	}
	return held.Member, err
}

// Bridge is "auto", as on a cluster's node: the wire shaper finds the
// bridge itself.
func (r *Runtime) Bridge(string) string { return "auto" }

// runningNetNSLocked says whether a running member owns ns.
func (r *Runtime) runningNetNSLocked(ns runtime.NetNS) bool {
	for _, m := range r.members {
		if m.NetNS == ns && m.Spec.Beside == "" && m.State.Running {
			return true
		}
	}
	return false
}

func clone(l map[string]string) map[string]string {
	if l == nil {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// State reports member id's state; runtime.ErrNotFound once removed.
func (r *Runtime) State(ctx context.Context, id string) (runtime.State, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[id]
	if !ok {
		return runtime.State{}, fmt.Errorf("member %s: %w", id, runtime.ErrNotFound)
	}
	if err := r.faultLocked("State", m.Name); err != nil {
		return runtime.State{}, err
	}
	return m.State, nil
}

// StopMember stops member id as SIGTERM does (exit code 143); a member
// gone already is not an error.
func (r *Runtime) StopMember(ctx context.Context, id string, grace time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[id]
	if !ok {
		return nil
	}
	if err := r.faultLocked("StopMember", m.Name); err != nil {
		return err
	}
	if m.State.Running {
		m.State = runtime.State{ExitCode: 143, Reason: "exited"}
	}
	return nil
}

// RemoveMember removes member id; one gone already is not an error.
func (r *Runtime) RemoveMember(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeLocked(id)
}

func (r *Runtime) removeLocked(id string) error {
	m, ok := r.members[id]
	if !ok {
		return nil
	}
	if err := r.faultLocked("RemoveMember", m.Name); err != nil {
		return err
	}
	delete(r.members, id)
	r.removed = append(r.removed, m.Name)
	return nil
}

// Exec answers a command in member id with the handler of its longest
// registered prefix (/usr/local/bin/rttlab written rttlab); a command
// without one exits 127 as a missing executable does.
func (r *Runtime) Exec(ctx context.Context, id string, s runtime.ExecSpec) (int, error) {
	if len(s.Cmd) == 0 {
		return -1, fmt.Errorf("exec in %s: no command", id)
	}
	key := fakes.CommandKey(s.Cmd)
	r.mu.Lock()
	m, ok := r.members[id]
	if !ok {
		r.mu.Unlock()
		return -1, fmt.Errorf("exec %s in %s: %w", s.Cmd[0], id, runtime.ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		r.mu.Unlock()
		return -1, fmt.Errorf("exec %s in %s: %w", s.Cmd[0], m.Name, err)
	}
	if err := r.faultLocked("Exec", m.Name, key); err != nil {
		r.mu.Unlock()
		return -1, err
	}
	if !m.State.Running {
		r.mu.Unlock()
		return -1, fmt.Errorf("exec %s in %s: the member is not running", s.Cmd[0], m.Name)
	}
	r.execs = append(r.execs, Exec{Member: m.Name, Cmd: append([]string(nil), s.Cmd...)})
	best, h, ok := fakes.Handler(r.handlers, key)
	stream := ok && r.streams[best]
	if h == nil && key != "rttlab agent session" {
		r.Unhandled = append(r.Unhandled, key)
	}
	x := &Call{Member: *m, Cmd: s.Cmd, Env: s.Env, User: s.User, Stdout: s.Stdout, Stderr: s.Stderr}
	x.Member.Spec.Labels = clone(m.Spec.Labels)
	r.mu.Unlock()

	if x.Stdout == nil {
		x.Stdout = io.Discard
	}
	if x.Stderr == nil {
		x.Stderr = io.Discard
	}
	if h == nil && key == "rttlab agent session" {
		// A session runs each call it is sent as an exec of its own here,
		// with the handlers of the verbs.
		return 0, fakes.ServeSession(ctx, s.Stdin, x.Stdout, "rttlab", func(ctx context.Context, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
			return r.Exec(ctx, id, runtime.ExecSpec{Cmd: cmd, Stdin: stdin, Stdout: stdout, Stderr: stderr})
		})
	}
	if s.Stdin != nil && stream {
		x.StdinR = s.Stdin
	} else if s.Stdin != nil {
		var b bytes.Buffer
		if _, err := io.Copy(&b, s.Stdin); err != nil {
			return -1, fmt.Errorf("exec %s in %s: stdin: %w", s.Cmd[0], m.Name, err)
		}
		x.Stdin = b.Bytes()
	}
	if h == nil {
		fmt.Fprintf(x.Stderr, "exec: %q: executable file not found in $PATH\n", s.Cmd[0])
		return 127, nil
	}
	code, err := h(ctx, x)
	if err == nil && ctx.Err() != nil {
		return -1, fmt.Errorf("exec %s in %s: %w", s.Cmd[0], m.Name, ctx.Err())
	}
	return code, err
}

// Logs returns the last tail lines the member printed.
func (r *Runtime) Logs(ctx context.Context, id string, tail int) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[id]
	if !ok {
		return "", fmt.Errorf("logs %s: %w", id, runtime.ErrNotFound)
	}
	return runtime.Tail(m.Logs, tail), nil
}

// RemoveRun removes the members labelled with the run, those beside
// another first (stopped when running), and returns how many it removed.
func (r *Runtime) RemoveRun(ctx context.Context, runID string) (int, error) {
	if runID == "" {
		return 0, errors.New("remove run: empty run id")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	var errs []error
	for _, beside := range []bool{true, false} {
		for _, m := range r.sortedLocked() {
			if m.Spec.Labels[runtime.LabelRun] != runID || (m.Spec.Beside != "") != beside {
				continue
			}
			if beside && m.State.Running {
				m.State = runtime.State{ExitCode: 143, Reason: "exited"}
			}
			if err := r.removeLocked(m.ID); err != nil {
				errs = append(errs, err)
				continue
			}
			n++
		}
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("remove run %s: %w", runID, errors.Join(errs...))
	}
	return n, nil
}

// HasImage says whether ref is present.
func (r *Runtime) HasImage(ctx context.Context, ref string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.images[ref], nil
}

// EnsureImage makes a Pullable ref present; any other absent one is
// runtime.ErrNotFound.
func (r *Runtime) EnsureImage(ctx context.Context, ref string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.images[ref] {
		return nil
	}
	if !r.Pullable[ref] {
		return fmt.Errorf("image %s: %w", ref, runtime.ErrNotFound)
	}
	r.images[ref] = true
	return nil
}

var _ runtime.Lister = (*Runtime)(nil)

// ListMembers lists the members whose labels (their role under
// runtime.LabelRole among them) carry labels, an empty value matching
// any, in start order.
func (r *Runtime) ListMembers(ctx context.Context, labels map[string]string) ([]runtime.Listed, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.faultLocked("ListMembers", ""); err != nil {
		return nil, err
	}
	var out []runtime.Listed
	for _, m := range r.sortedLocked() {
		have := clone(m.Spec.Labels)
		if m.Role != "" {
			if have == nil {
				have = map[string]string{}
			}
			have[runtime.LabelRole] = m.Role
		}
		if !fakes.LabelsMatch(have, labels) {
			continue
		}
		out = append(out, runtime.Listed{Member: m.Member, Labels: have, Running: m.State.Running})
	}
	return out, nil
}
