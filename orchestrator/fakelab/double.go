package fakelab

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/runtime/runtimefake"
)

// Double is the test double of the runtime a lab's studies run on.
type Double string

const (
	// OnEngine is Docker's runtime (engine.Lab) over the in-memory
	// engine, with every add-on Docker has: a network per run, the
	// host's network for the wire shaper, volumes, copy.
	OnEngine Double = "engine"
	// OnRuntime is the runtime interface's own double (runtimefake) with
	// none of Docker's add-ons, as a cluster gives the lab: no network to
	// make, no host member, members found by label only. What a study
	// does through it is what it would do through any runtime.
	OnRuntime Double = "runtime"
)

// Doubles are both doubles, for a test run on each.
var Doubles = []Double{OnEngine, OnRuntime}

// NewOn starts a lab (see New) whose Runtime is the double d. The
// handlers, and those a test registers with Handle, answer on both; the
// engine still answers EngineInfo, what a study's manifest records.
func NewOn(t testing.TB, d Double) *Lab {
	t.Helper()
	return newLab(t, NewTwin(d))
}

// Twin is the fake engine and, for a lab on the runtime double, that
// double beside it. What a test scripts (handlers, images, failures) goes
// to both; Runtime is the one the studies run on, and what the test reads
// back (members started, commands run, what is left) comes from it.
type Twin struct {
	*enginefake.Engine
	// RT is the runtime double the studies run on instead of the
	// engine's runtime; nil on the engine.
	RT *runtimefake.Runtime
}

// NewTwin returns an empty engine and, for OnRuntime, the runtime double
// beside it, whose members take the engine's IPByService addresses and
// whose published ports answer on its HostPort.
//
// The runtime double has no copy of its own (Docker's archive endpoint):
// a folder is copied into a member by `tar -x -C DIR` reading the archive,
// which the twin extracts into the engine's Copied, where the engine's
// copy puts it too.
func NewTwin(d Double) *Twin {
	l := &Twin{Engine: enginefake.New()}
	if d == OnRuntime {
		l.RT = runtimefake.New()
		l.RT.AddrOf = func(s runtime.MemberSpec) string { return l.IPByService[s.Labels[engine.LabelService]] }
		l.RT.Handle("tar -x -C", func(ctx context.Context, x *runtimefake.Call) (int, error) {
			return 0, l.CopyTo(x.Member.Name, x.Cmd[len(x.Cmd)-1], x.Stdin)
		})
	}
	return l
}

// CopyTo extracts the tar archive tarball into dir of the member named
// name, as the engine's copy does, into Copied.
func (l *Twin) CopyTo(name, dir string, tarball []byte) error {
	return l.Extract(name, dir, bytes.NewReader(tarball))
}

// OnEach runs test once on each double, as a subtest named after it.
func OnEach(t *testing.T, test func(t *testing.T, l *Lab)) {
	t.Helper()
	for _, d := range Doubles {
		t.Run(string(d), func(t *testing.T) { test(t, NewOn(t, d)) })
	}
}

// Runtime is the runtime the lab's studies run on.
func (l *Twin) Runtime() runtime.Runtime {
	if l.RT != nil {
		return l.RT
	}
	return engine.NewLab(l.Engine, "")
}

// Double says which double Runtime is.
func (l *Twin) Double() Double {
	if l.RT != nil {
		return OnRuntime
	}
	return OnEngine
}

// Handle has h answer the commands starting with prefix, on the engine
// and on the runtime double.
func (l *Twin) Handle(prefix string, h enginefake.Handler) {
	l.Engine.Handle(prefix, h)
	if l.RT != nil {
		l.RT.Handle(prefix, onRuntime(h))
	}
}

// HandleStream is Handle for a command that reads its stdin as it comes.
func (l *Twin) HandleStream(prefix string, h enginefake.Handler) {
	l.Engine.HandleStream(prefix, h)
	if l.RT != nil {
		l.RT.HandleStream(prefix, onRuntime(h))
	}
}

// AddImage makes ref present on the engine and the runtime double.
func (l *Twin) AddImage(ref string, labels map[string]string) string {
	if l.RT != nil {
		l.RT.AddImage(ref)
	}
	return l.Engine.AddImage(ref, labels)
}

// DropImage makes ref absent on the engine and the runtime double.
func (l *Twin) DropImage(ref string) {
	if l.RT != nil {
		l.RT.DropImage(ref)
	}
	l.Engine.DropImage(ref)
}

// Left lists what the lab's runtime holds still: its members by name and,
// on the engine, its networks (the runtime double makes none).
func (l *Twin) Left() (members, networks []string) {
	if l.RT != nil {
		return l.RT.Live(), nil
	}
	return l.Live()
}

// Untouched says whether nothing was started or run in the lab's
// runtime, and the engine was asked nothing but EngineInfo.
func (l *Twin) Untouched() bool {
	for _, c := range l.Calls() {
		if !strings.HasPrefix(c, "EngineInfo ") {
			return false
		}
	}
	return l.RT == nil || (len(l.RT.Started()) == 0 && len(l.RT.Execs()) == 0)
}

// onRuntime answers a runtime double's exec with an engine handler: the
// member stands for the container it would be on Docker (its name,
// labels and address).
func onRuntime(h enginefake.Handler) runtimefake.Handler {
	return func(ctx context.Context, x *runtimefake.Call) (int, error) {
		labels := x.Member.Spec.Labels
		if x.Member.Role != "" {
			labels = clonePlus(labels, runtime.LabelRole, x.Member.Role)
		}
		c := enginefake.Container{ID: x.Member.ID, IP: x.Member.Addr, State: "running",
			Spec: engine.ContainerSpec{Name: x.Member.Name, Labels: labels}}
		return h(ctx, &enginefake.Call{Container: c, Cmd: x.Cmd, Env: x.Env, User: x.User,
			Stdin: x.Stdin, StdinR: x.StdinR, Stdout: x.Stdout, Stderr: x.Stderr})
	}
}

func clonePlus(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

// Started is a member the lab's runtime started, as either double tells.
type Started struct {
	Name   string
	Image  string
	Cmd    []string
	Env    []string
	Labels map[string]string // the role under LabelRole among them
	// Beside says it shares another member's network namespace.
	Beside bool
	// CapAdd are its added capabilities; DropAll says it starts from none.
	CapAdd  []string
	DropAll bool
	// NanoCPUs is its CPU limit in billionths of a CPU; 0: none.
	NanoCPUs int64
}

// Started lists every member started so far, in order, without the
// short-lived ones that only answer one question (the kernel netem probe,
// a rule sweep), as enginefake's Created.
func (l *Twin) Started() []Started {
	var out []Started
	if l.RT != nil {
		for _, s := range l.RT.Started() {
			if s.Labels[engine.LabelRole] == engine.RoleOnce {
				continue
			}
			st := Started{Name: s.Name, Image: s.Image, Cmd: s.Cmd, Env: s.Env, Labels: s.Labels, Beside: s.Beside != "", DropAll: s.DropAllCaps, NanoCPUs: s.NanoCPUs}
			if s.Role != "" {
				st.Labels = clonePlus(s.Labels, runtime.LabelRole, s.Role)
			}
			for _, c := range s.CapAdd {
				st.CapAdd = append(st.CapAdd, string(c))
			}
			out = append(out, st)
		}
		return out
	}
	for _, c := range l.Created() {
		out = append(out, Started{Name: c.Name, Image: c.Image, Cmd: c.Cmd, Env: c.Env, Labels: c.Labels, Beside: strings.HasPrefix(c.NetworkMode, "container:"),
			CapAdd: c.CapAdd, DropAll: slices.Equal(c.CapDrop, []string{"ALL"}), NanoCPUs: c.NanoCPUs})
	}
	return out
}

// RequireEmpty fails t when the lab's runtime holds anything still: a
// member, or on the engine a container or a network.
func (l *Twin) RequireEmpty(t testing.TB) {
	t.Helper()
	if l.RT != nil {
		if live := l.RT.Live(); len(live) > 0 {
			t.Fatalf("left behind: members %v", live)
		}
	}
	l.Engine.RequireEmpty(t)
}

// ExecsRun lists every command run in a member so far, by the member's
// name, on the lab's runtime.
func (l *Twin) ExecsRun() []enginefake.ExecRecord {
	if l.RT == nil {
		return l.Execs()
	}
	var out []enginefake.ExecRecord
	for _, e := range l.RT.Execs() {
		out = append(out, enginefake.ExecRecord{Container: e.Member, Cmd: e.Cmd})
	}
	return out
}

// NotAnswered lists the commands no handler answered on the lab's
// runtime.
func (l *Twin) NotAnswered() []string {
	if l.RT != nil {
		return append(slices.Clone(l.RT.Unhandled), l.Unhandled...)
	}
	return l.Unhandled
}

// runtimeOps are the runtime's calls that stand for the engine's, for a
// failure armed with FailOn: what the runtime double fails instead.
var runtimeOps = map[string]string{
	"CreateContainer":  "StartMember",
	"StartContainer":   "StartMember",
	"InspectContainer": "State",
	"StopContainer":    "StopMember",
	"RemoveContainer":  "RemoveMember",
	"ListContainers":   "ListMembers",
	"Exec":             "Exec",
}

// FailOn makes the next times calls of op fail with err as
// enginefake.Engine.FailOn does; on the runtime double, the call of the
// runtime that stands for the engine's op (a container's create or start:
// StartMember). An op the runtime double has no call for (a network's,
// an image's) fails on the engine only.
func (l *Twin) FailOn(op, match string, times int, err error) *enginefake.Fault {
	if rop, ok := runtimeOps[op]; ok && l.RT != nil {
		l.RT.FailTimes(rop, match, times, err)
	}
	return l.Engine.FailOn(op, match, times, err)
}

// CrashOnStart makes the next times members whose name ends with match
// exit with code right after they start, having printed logs.
func (l *Twin) CrashOnStart(match string, times, code int, logs string) {
	if l.RT != nil {
		l.RT.CrashOnStart(match, times, code, logs)
	}
	l.Engine.CrashOnStart(match, times, code, logs)
}

// Exit makes every running member whose name ends with match exit, and
// says how many did (on the runtime double: 1 when any did).
func (l *Twin) Exit(match string, code int, logs string) int {
	n := l.Engine.Exit(match, code, logs)
	if l.RT != nil && l.RT.Exit(match, code, logs) {
		n++
	}
	return n
}

// SameFolders fails t unless the results folders a and b hold the same
// files with the same bytes, each file's content first passed through
// mask (which blanks what differs between any two runs: a run ID, a
// clock's time stamp).
func SameFolders(t testing.TB, a, b string, mask func(name string, content []byte) []byte) {
	t.Helper()
	files := func(dir string) map[string][]byte {
		out := map[string][]byte{}
		err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			out[filepath.ToSlash(rel)] = mask(filepath.ToSlash(rel), b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	fa, fb := files(a), files(b)
	for name, ca := range fa {
		cb, ok := fb[name]
		switch {
		case !ok:
			t.Errorf("%s: in %s only", name, a)
		case !bytes.Equal(ca, cb):
			t.Errorf("%s differs:\n%s\n---\n%s", name, ca, cb)
		}
	}
	for name := range fb {
		if _, ok := fa[name]; !ok {
			t.Errorf("%s: in %s only", name, b)
		}
	}
	if len(fa) == 0 {
		t.Errorf("%s holds no file", a)
	}
}

// EachDouble runs test once per double, as a subtest named after it.
func EachDouble(t *testing.T, test func(t *testing.T, d Double)) {
	t.Helper()
	for _, d := range Doubles {
		t.Run(string(d), func(t *testing.T) { test(t, d) })
	}
}
