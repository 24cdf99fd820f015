// Package runtime is what the lab needs of any runtime that runs its
// members: start a member from an image, start an agent beside a member
// (in its network namespace), run commands in a member and read its
// output, tell whether it still runs, remove it, remove everything a run
// labelled, and have the images the members need.
//
// Docker implements it with the Engine API (engine.Lab: a container per
// member on the run's bridge network, an agent a container sharing its
// target's network namespace); Kubernetes would with client-go (a pod per
// member in a namespace per run, exec over the API, an agent a container
// in the member's pod or a session of a privileged node agent entering
// the pod's network namespace, as Chaos Mesh's chaos-daemon does). No type
// of either crosses this package: members are named by the runtime's
// handle (ID), their network namespace by an opaque NetNS, capabilities
// and platforms by plain values.
//
// The interfaces are small on purpose: each consumer asks for the one it
// uses (Execer for an agent client, Members for a study starting its
// nodes), and Runtime is all of them.
package runtime

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
)

// Labels the lab puts on every member; a runtime keeps them where its
// objects carry labels (Docker: container labels; Kubernetes: pod labels,
// and the run's namespace carries LabelRun).
const (
	LabelRun  = "io.rttlab.run"  // run id: RemoveRun finds a run's members by it
	LabelRole = "io.rttlab.role" // db, app, agent, client, proxy...
)

// ErrNotFound is returned when a member or an image the runtime is asked
// about does not exist.
var ErrNotFound = errors.New("not found")

// ExecSpec describes a command run inside a member.
type ExecSpec struct {
	Cmd    []string
	User   string
	Env    []string
	Stdin  io.Reader
	Stdout io.Writer // nil discards
	Stderr io.Writer // nil discards
	// Timeout bounds the whole exec; zero means the runtime's default
	// for a short call (Docker's: 30 s).
	Timeout time.Duration
}

// Capability is a Linux capability without its CAP_ prefix, as both
// Docker and Kubernetes spell it.
type Capability string

// The capabilities an agent needs to shape and probe a member's traffic.
const (
	CapNetAdmin Capability = "NET_ADMIN" // qdiscs, netfilter rules, NFQUEUE
	CapNetRaw   Capability = "NET_RAW"   // ICMP probes, packet captures
)

// NetNS is a runtime's handle on a member's network namespace: what an
// agent started beside the member joins. It is opaque, and means
// something only to the runtime that returned it. Docker: the ID of the
// container that owns the namespace (joined as container:<id>).
// Kubernetes: the member's pod (namespace/name), whose containers share
// one network namespace; a node agent finds the pod's sandbox PID from
// the container runtime and enters /proc/<pid>/ns/net.
type NetNS string

// MemberSpec is what StartMember needs.
type MemberSpec struct {
	// Name is the member's name, unique on the runtime (Docker: the
	// container name; Kubernetes: the pod name, or the container name of
	// a member beside another in its pod).
	Name string
	// Role is the member's part in the run (db, app, agent...), kept under
	// LabelRole.
	Role  string
	Image string
	Cmd   []string
	// Entrypoint, when set, replaces the image's; User and WorkDir, when
	// set, the image's user and working folder; Init runs an init process
	// that reaps the member's children (Docker: --init; Kubernetes: a
	// shared process namespace's pause).
	Entrypoint []string
	User       string
	WorkDir    string
	Init       bool
	Env        []string // KEY=value
	// Labels carry the run (LabelRun) and whatever else finds the member
	// again; Role is added under LabelRole.
	Labels map[string]string
	// Aliases are the names the other members reach it by on the lab's
	// network (Docker: network aliases; Kubernetes: a headless service
	// per name). A member beside another has none of its own.
	Aliases []string
	// Beside, when set, is the network namespace the member shares (its
	// target's NetNS) instead of one of its own on the lab's network:
	// Docker's container:<id>; on Kubernetes a session of the node
	// agent in the target pod's netns (the pod is never edited).
	Beside NetNS
	// CapAdd are capabilities the member's processes get beyond the
	// runtime's default set; DropAllCaps starts from none instead.
	CapAdd      []Capability
	DropAllCaps bool
	// CapDrop are capabilities taken from the default set (a user's
	// compose service's cap_drop), after DropAllCaps.
	CapDrop []Capability
	// Mounts are the member's bind mounts, fresh volumes and tmpfs, in
	// the order given.
	Mounts []Mount
	// Health, when set, is the member's health check, reported by State.
	Health *HealthCheck
	// Publish are the member's ports ("8080/tcp") reached from the
	// controller's loopback on a port of the runtime's choice, read back
	// in Member.Published (Docker: published on 127.0.0.1; Kubernetes: a
	// port-forward).
	Publish []string
	// Platform is "os/arch" (as engine.Platform spells it) the member's image is run as;
	// empty: the runtime's own. Kubernetes: a node selector on
	// kubernetes.io/arch.
	Platform string
	// NanoCPUs limits the member to this many billionths of a CPU (Docker:
	// --cpus × 1e9; Kubernetes: limits.cpu of NanoCPUs/1e6 millicores);
	// zero leaves it unlimited.
	NanoCPUs int64
	// Node is the cluster node the member must run on; empty: the runtime
	// chooses. Docker runs every member on its one host and refuses a
	// Node; Kubernetes: a node selector on kubernetes.io/hostname, beside
	// the platform's (the node's hostname label, most often its name). A
	// member beside another runs where its target runs; a member on a
	// host's network (WireHost.StartHostMember) goes to the node of that
	// name (Hosted.Hosts).
	Node string
}

// Member is one started member.
type Member struct {
	Name string
	Role string
	// ID is the runtime's handle: what Exec, Logs, State, StopMember and
	// RemoveMember take (Docker: the container ID; Kubernetes:
	// namespace/pod/container).
	ID string
	// Addr is its address on the lab's network; empty for a member beside
	// another, which answers on the address of the namespace it shares.
	Addr string
	// Node is the host it runs on; empty on one host (Docker).
	Node string
	// NetNS is its network namespace, for the agents started beside it.
	NetNS NetNS
	// Published maps each port of MemberSpec.Publish to the host:port
	// that reaches it from the controller.
	Published map[string]string
}

// MountKind is what a Mount mounts.
type MountKind string

// The kinds of mount a member may have.
const (
	// MountBind mounts the controller host's folder Source (Kubernetes: a
	// hostPath volume, on one node only).
	MountBind MountKind = "bind"
	// MountVolume mounts a fresh volume that goes with the member: a study
	// never starts from a previous member's data (Docker: an anonymous
	// volume; Kubernetes: an emptyDir).
	MountVolume MountKind = "volume"
	// MountTmpfs mounts a memory file system; Source, when set, are its
	// options ("size=64m").
	MountTmpfs MountKind = "tmpfs"
)

// Mount is one mount of a member at Target.
type Mount struct {
	Kind     MountKind
	Source   string
	Target   string
	ReadOnly bool
}

// HealthCheck is a member's health check, run by the runtime (Docker: the
// container's HEALTHCHECK; Kubernetes: a readiness probe).
type HealthCheck struct {
	// Test is the check as compose writes it: ["CMD", args...],
	// ["CMD-SHELL", line] or ["NONE"].
	Test        []string
	Interval    time.Duration
	Timeout     time.Duration
	StartPeriod time.Duration
	Retries     int
}

// State is whether a member runs, and why not when it stopped.
type State struct {
	Running bool
	// ExitCode is the main process's exit status once it stopped.
	ExitCode int
	// Reason is the runtime's word for the state (Docker: the container
	// status "created", "running", "exited", or "OOMKilled"; Kubernetes:
	// the container's waiting or terminated reason, such as
	// "CrashLoopBackOff", "Error", "Completed", "OOMKilled").
	Reason string
	// Health is the verdict of the member's health check: "starting",
	// "healthy" or "unhealthy"; empty for a member without one.
	Health string
}

// Tail is the last n lines of a member's output s, without the final
// newline, as a runtime returns a member's logs cut to their tail.
func Tail(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// LastLines is the last n lines of a member's output s, each indented by
// four spaces, as an error quotes what a command or a member printed.
func LastLines(s string, n int) string {
	return "    " + strings.ReplaceAll(Tail(s, n), "\n", "\n    ")
}

// Execer runs commands in a member and reads its output.
type Execer interface {
	// Exec runs s.Cmd in the running member id, streams its output and
	// returns its exit code. Docker: exec create, attach and inspect on
	// the container. Kubernetes: the pod's exec subresource over SPDY or
	// WebSocket (remotecommand), the exit code from the stream's status.
	Exec(ctx context.Context, id string, s ExecSpec) (int, error)
	// Logs returns the last tail lines of the member's output. Docker:
	// the container's logs; Kubernetes: the pod container's log with
	// tailLines.
	Logs(ctx context.Context, id string, tail int) (string, error)
}

// Stater tells whether a member runs.
type Stater interface {
	// State tells whether member id runs, and its exit status when not;
	// ErrNotFound when it is gone. Docker: inspect the container.
	// Kubernetes: the pod's container status.
	State(ctx context.Context, id string) (State, error)
}

// Watcher is what a wait for a member asks: commands run in it (a
// readiness probe), its output and whether it still runs.
type Watcher interface {
	Execer
	Stater
}

// Members starts, watches, stops and removes members.
type Members interface {
	// StartMember creates and starts a member of s and reads its address.
	// A Member with an ID comes back with an error too when something was
	// created: the caller removes it. Docker: create a container on the
	// run's network (or in container:<Beside>), start it, inspect it.
	// Kubernetes: create a pod in the run's namespace (for Beside, a
	// session of the privileged node agent on the target's node, which
	// enters the target pod's network namespace), wait until it runs,
	// read its pod IP.
	StartMember(ctx context.Context, s MemberSpec) (Member, error)
	Stater
	// StopMember stops member id: its processes get SIGTERM, then SIGKILL
	// after grace (an agent undoes its shaping on SIGTERM). A member gone
	// already is not an error. Docker: stop the container. Kubernetes:
	// delete the pod with gracePeriodSeconds, or end the agent session.
	StopMember(ctx context.Context, id string, grace time.Duration) error
	// RemoveMember removes member id whether it runs or not, with what it
	// alone used (Docker: anonymous volumes); one gone already is not an
	// error. Docker: force-remove the container. Kubernetes: delete the
	// pod with a zero grace period.
	RemoveMember(ctx context.Context, id string) error
}

// Runs removes what a run left.
type Runs interface {
	// RemoveRun removes everything labelled LabelRun=runID: the agents
	// beside members first (stopped, so that they undo their shaping),
	// then the members, then the run's network and volumes. It returns
	// how many objects it removed, and one error per object it could not.
	// Docker: containers, networks and volumes by label. Kubernetes:
	// delete the run's namespace (its pods, services and claims with it)
	// and end the node agent's sessions of the run.
	RemoveRun(ctx context.Context, runID string) (int, error)
}

// Images has the images members are started from.
type Images interface {
	// HasImage says whether ref is present where members start. Docker:
	// inspect the image. Kubernetes: on every node that may run a member
	// (the node's image list), since members use imagePullPolicy Never.
	HasImage(ctx context.Context, ref string) (bool, error)
	// EnsureImage makes ref present, pulled when a registry has it; an
	// image it cannot get is an error wrapping ErrNotFound (rttlab's own
	// are built with `rttlab images build`). Docker: inspect, else pull.
	// Kubernetes: import the image's archive into each node's containerd
	// (ctr -n k8s.io images import), as kind does.
	EnsureImage(ctx context.Context, ref string) error
}

// Runtime is everything the lab needs of a runtime.
type Runtime interface {
	Members
	Execer
	Runs
	Images
}
