package runtime

import (
	"context"
	"io"
)

// The add-ons below are what one runtime has and another need not: a
// consumer asks for one with a type assertion and falls back, or refuses
// with its reason, when the runtime lacks it. Docker (engine.Lab) has
// them all; a Kubernetes runtime keeps a run in a namespace of its own
// (no network to make), has no host bridge to shape on, and removes a
// run by deleting that namespace.

// Listed is a member found by its labels.
type Listed struct {
	Member
	Labels map[string]string
	// Running says whether it runs now, and Status the runtime's word
	// for its state (Docker: the container's "running", "exited"...).
	Running bool
	Status  string
}

// Lister finds the members that carry labels (a label of empty value:
// any value of it). Docker: containers listed by label. Kubernetes: pods
// by label selector.
type Lister interface {
	ListMembers(ctx context.Context, labels map[string]string) ([]Listed, error)
}

// MemberInfo is what a member found by its labels was started with.
type MemberInfo struct {
	// Addr is its address on the lab's network (Docker, the lab naming
	// no network: on the network it is on).
	Addr string
	// Env is its environment (KEY=value), the image's included.
	Env []string
}

// Inspector reads back what a member was started with: a run found again
// by its labels (`rttlab shape` on the stack of `rttlab up`) takes its
// database's credentials from the database's environment. Docker:
// inspect the container. Kubernetes: the pod's spec and status.
type Inspector interface {
	InspectMember(ctx context.Context, id string) (MemberInfo, error)
}

// NetworkInfo is a network the lab made for a run.
type NetworkInfo struct {
	ID     string
	Name   string
	Labels map[string]string
}

// Network is a runtime on which the lab makes each run's network itself:
// Docker's bridge network, which the members started after it join under
// their aliases. A runtime whose run has a network already (Kubernetes:
// the run's namespace) does not implement it.
type Network interface {
	// CreateNetwork creates the network name, labelled labels, returns
	// its ID, and has the members started after it join it.
	CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error)
	// ListNetworks lists the networks that carry labels.
	ListNetworks(ctx context.Context, labels map[string]string) ([]NetworkInfo, error)
	// RemoveNetwork removes the network id.
	RemoveNetwork(ctx context.Context, id string) error
}

// Volumes is a runtime whose members' volumes outlive them until removed
// (Docker's named volumes of a run); Kubernetes' go with the namespace.
type Volumes interface {
	ListVolumes(ctx context.Context, labels map[string]string) ([]string, error)
	RemoveVolume(ctx context.Context, name string) error
}

// ImageRemover is a runtime that removes the images carrying labels (the
// ones rttlab built), returning the references removed.
type ImageRemover interface {
	RemoveImages(ctx context.Context, labels map[string]string) ([]string, error)
}

// HostNet says where a member started by StartHostMember lives.
type HostNet string

// The network namespaces a host member may have.
const (
	// OnHost is the host's own network namespace (Docker: network mode
	// host), where the run's bridge is.
	OnHost HostNet = "host"
	// NoNet is an empty namespace of its own, loopback only (Docker:
	// network mode none).
	NoNet HostNet = "none"
)

// WireHost is a runtime whose members' traffic crosses a bridge of the
// host the controller can reach: a member started in the host's network
// namespace holds a member's packets on it (the wire shaper), and a
// short-lived one sweeps the rules such shapers leave in the host's
// tables. Docker has it (the run's bridge network); so has a Kubernetes
// runtime whose nodes bridge their pods (a session of the node agent in
// the node's network namespace holds a pod's packets on its bridge).
type WireHost interface {
	// StartHostMember creates and starts a member of s (s.Aliases
	// unused) in the namespace net; it has no address of its own.
	// s.Node, when set, is the host it runs on; else s.Beside, when set,
	// names the member whose host it runs on (on one host, both unused;
	// on a cluster, that node or that member's node). A Member with an ID comes back with an error too when
	// something was created: the caller removes it.
	StartHostMember(ctx context.Context, s MemberSpec, net HostNet) (Member, error)
	// Bridge is the host's interface behind the run's network networkID
	// (empty: none), or netem.BridgeAuto where the shaper finds it on its
	// host (a cluster's node, whose pod bridge the controller cannot
	// name).
	Bridge(networkID string) string
}

// Hosted is a runtime whose members run on several hosts (a cluster's
// nodes). Hosts lists those that take members now, by the names a
// member on a host's network takes in MemberSpec.Node (Kubernetes: the
// nodes' names): what acts on each host's own tables (a wire
// shaper's rules, a probe of its kernel) runs once per host, each a
// member started on the host's network there. A runtime without it has
// one host.
type Hosted interface {
	Hosts(ctx context.Context) ([]string, error)
}

// Copier is a runtime that extracts a tar archive into a member's folder
// by its own API (Docker: the archive endpoint of a container). A runtime
// without it gets the archive through Exec: `tar -x -C dir` reading it on
// its standard input (as kubectl cp does).
type Copier interface {
	CopyTo(ctx context.Context, id, dir string, tarball io.Reader) error
}

// AdoptSpec names a member the lab did not start and must leave as it
// is: a user's app or database where it already runs.
type AdoptSpec struct {
	// Target is the runtime's name of it (Kubernetes: pod/NAME,
	// deploy/NAME or statefulset/NAME in Namespace); Container, the
	// container meant when it has several.
	Target, Namespace, Container string
	// Alias is the name the run's members started after it reach it by.
	Alias string
	// Labels carry the run it is measured in (LabelRun).
	Labels map[string]string
}

// Adopted is a member found running: its handle, its environment, and
// what tells afterwards that the lab left it as it was.
type Adopted struct {
	Member
	// Env is its container's environment (KEY=value) as its spec sets it.
	Env []string
	// Instance identifies what runs (Kubernetes: the pod's UID and its
	// container's restart count).
	Instance Instance
}

// Instance is what runs of a member: the same UID and restart count
// before and after a measurement say it was neither replaced nor
// restarted.
type Instance struct {
	UID      string `json:"uid"`
	Restarts int    `json:"restarts"`
}

// Adopter is a runtime on which the lab measures members it did not
// start: a user's app and database where they already run, found by
// name, never edited, restarted or removed (RemoveRun leaves them; only
// the agents beside them go). Kubernetes has it; on Docker a user's
// stack is started by rttlab from its compose file instead.
type Adopter interface {
	Adopt(ctx context.Context, s AdoptSpec) (Adopted, error)
	// InstanceOf reads member id's instance again.
	InstanceOf(ctx context.Context, id string) (Instance, error)
}
