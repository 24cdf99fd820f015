package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// AgentEntrypoint is the agent image's entrypoint: a session's command is
// its arguments, as a container's command is on Docker, unless it names
// an absolute path itself.
const AgentEntrypoint = agentclient.AgentBin

// nodeAgentContainer is the node agent's container in its pod.
const nodeAgentContainer = "agent"

// sessionRoot is where the node agent keeps its sessions: per session a
// folder with the target's PID (target) and container ID (cid), the
// capabilities its processes keep (caps), the command's PID (pid), its
// output (log), its exit status once it ended (exit), and the folder
// (run) its processes see as /run/rttlab.
//
// The sessions share the node agent's file system, where agents on
// Docker each have their own: the agent serves its shaper on
// /run/rttlab/agent.sock, and a second agent on the node would find the
// first one's socket there (and its control would reach the first one's
// shaper). So a session's processes, and every exec in it, run in a
// mount namespace of their own in which the session's run folder is
// bound on /run/rttlab.
const sessionRoot = "/run/rttlab"

// sessionEnter is the part of the start and exec scripts that puts the
// command ("$@") in session $d's view: after it, "$@" runs in a mount
// namespace of its own with $d/run on /run/rttlab, in the network
// namespace $net enters (nsenter into the target's process $pid, or
// unshare for an empty one), with the capabilities $caps (setpriv's
// bounding set; empty: all).
const sessionEnter = `set -- unshare --mount --propagation private -- sh -c 'mount --bind "$0" ` + sessionRoot + ` && exec "$@"' "$d/run" \
	$net ${caps:+setpriv --bounding-set=$caps --inh-caps=-all --} "$@"
`

// sessionStartScript starts a session: $1 its name, $2 the target's
// container ID (or "host": the node's own network namespace, the node
// agent's, which runs on the node's network; "none": an empty one of
// its own), $3 the capabilities its processes keep (setpriv's
// bounding set; empty: all), the command after them. It finds a process
// of the container by its ID in the cgroup paths (both the cgroupfs and
// the systemd drivers name it), and starts the command detached in that
// process's network namespace.
const sessionStartScript = `set -u
name=$1 cid=$2 caps=$3; shift 3
d=` + sessionRoot + `/$name
if [ -s "$d/pid" ] && [ ! -s "$d/exit" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
	echo "session $name runs already" >&2; exit 3
fi
pid=
case $cid in
host|none) ;;
*)
	for f in /proc/[0-9]*/cgroup; do
		if grep -qF "$cid" "$f" 2>/dev/null; then pid=${f#/proc/}; pid=${pid%/cgroup}; break; fi
	done
	if [ -z "$pid" ]; then echo "no process of container $cid on this node" >&2; exit 4; fi ;;
esac
net="nsenter -t $pid -n --"
case $cid in host) net= ;; none) net="unshare --net --" ;; esac
rm -rf "$d" && mkdir -p "$d/run" || exit 5
echo "$pid" >"$d/target"; echo "$cid" >"$d/cid"; printf '%s' "$caps" >"$d/caps"
` + sessionEnter + `setsid sh -c '"$@" & echo $! >"$0/pid"; wait $!; echo $? >"$0/exit"' "$d" "$@" </dev/null >"$d/log" 2>&1 &
i=0
while [ ! -s "$d/pid" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
if [ ! -s "$d/pid" ]; then echo "session $name did not start" >&2; exit 5; fi
if [ "$cid" = none ]; then cp "$d/pid" "$d/target"; fi
`

// sessionExecScript runs a command in session $1's view: its target's
// network namespace, its capabilities and its /run/rttlab. The target's
// PID is checked to still be a process of the target's container (one
// that restarted has others, and a PID that was freed may be reused by
// any process of the node).
const sessionExecScript = `d=` + sessionRoot + `/$1; shift
if [ ! -r "$d/target" ]; then echo "no session ${d##*/} in this node agent" >&2; exit 126; fi
pid=$(cat "$d/target"); caps=$(cat "$d/caps"); cid=$(cat "$d/cid")
case $cid in
host) ;;
none)
	if ! kill -0 "$pid" 2>/dev/null; then echo "session ${d##*/} has ended: its network namespace is gone" >&2; exit 126; fi ;;
*)
	if ! grep -qF "$cid" "/proc/$pid/cgroup" 2>/dev/null; then
		echo "session ${d##*/}: process $pid of its target's container $cid is gone (the container ended or restarted)" >&2; exit 126
	fi ;;
esac
net="nsenter -t $pid -n --"
if [ "$cid" = host ]; then net=; fi
` + sessionEnter + `exec "$@"
`

// sessionStateScript prints "running", "exited CODE" or "gone".
const sessionStateScript = `d=` + sessionRoot + `/$1
if [ -s "$d/exit" ]; then echo "exited $(cat "$d/exit")"
elif [ -s "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then echo running
elif [ -d "$d" ]; then echo "exited -1"
else echo gone; fi
`

// sessionStopScript sends session $1 SIGTERM, then SIGKILL after $2
// seconds, and with $3 = 1 removes its folder.
const sessionStopScript = `d=` + sessionRoot + `/$1
if [ -s "$d/pid" ] && [ ! -s "$d/exit" ]; then
	p=$(cat "$d/pid")
	kill -TERM "$p" 2>/dev/null
	i=0
	while kill -0 "$p" 2>/dev/null && [ $i -lt $(($2 * 20)) ]; do sleep 0.05; i=$((i+1)); done
	kill -KILL "$p" 2>/dev/null
fi
if [ "$3" = 1 ]; then rm -rf "$d"; fi
exit 0
`

// sessionStopAllScript sends every session SIGTERM and waits up to 3 s
// for them to undo their shaping and end.
const sessionStopAllScript = `for d in ` + sessionRoot + `/*; do
	if [ -s "$d/pid" ] && [ ! -s "$d/exit" ]; then kill -TERM "$(cat "$d/pid")" 2>/dev/null; fi
done
i=0
while [ $i -lt 60 ]; do
	live=0
	for d in ` + sessionRoot + `/*; do
		if [ -s "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then live=1; fi
	done
	if [ $live = 0 ]; then break; fi
	sleep 0.05; i=$((i+1))
done
exit 0
`

// sessionLogsScript prints the last $2 lines of session $1's output.
const sessionLogsScript = `tail -n "$2" ` + sessionRoot + `/"$1"/log`

// startSession starts member s as a session of the node agent on its
// target's node, in the target's network namespace.
func (l *Lab) startSession(ctx context.Context, s runtime.MemberSpec) (runtime.Member, error) {
	if errs := validation.IsDNS1123Label(s.Name); len(errs) > 0 {
		return runtime.Member{}, fmt.Errorf("start %s: the name cannot name a session: %s", s.Name, errs[0])
	}
	if len(s.Cmd) == 0 {
		return runtime.Member{}, fmt.Errorf("start %s: a member beside another needs a command", s.Name)
	}
	namespace, pod, err := parseNetNS(s.Beside)
	if err != nil {
		return runtime.Member{}, fmt.Errorf("start %s: %w", s.Name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	target, err := l.C.CoreV1().Pods(namespace).Get(cctx, pod, metav1.GetOptions{})
	if err != nil {
		return runtime.Member{}, l.podErr("start "+s.Name+": target", memberID{Namespace: namespace, Pod: pod, Container: "*"}, err)
	}
	cid, err := targetContainer(target)
	if err != nil {
		return runtime.Member{}, fmt.Errorf("start %s: %w", s.Name, err)
	}
	return l.runSession(ctx, s, target.Spec.NodeName, cid)
}

// runSession starts s as a session of the node agent on node, in the
// network namespace of container cid (or "host", "none": see
// sessionStartScript).
func (l *Lab) runSession(ctx context.Context, s runtime.MemberSpec, node, cid string) (runtime.Member, error) {
	cctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	agent, err := l.ensureNodeAgent(ctx, node, s.Image)
	if err != nil {
		return runtime.Member{}, fmt.Errorf("start %s: node agent on %s: %w", s.Name, node, err)
	}
	id := memberID{Namespace: l.Namespace, Pod: agent, Container: nodeAgentContainer, Session: s.Name}
	cmd := wrapCmd(s.Cmd, "", s.Env)
	if !strings.HasPrefix(s.Cmd[0], "/") {
		cmd = wrapCmd(append([]string{AgentEntrypoint}, s.Cmd...), "", s.Env)
	}
	args := append([]string{"sh", "-c", sessionStartScript, "sh", s.Name, cid, boundingSet(s)}, cmd...)
	var stderr strings.Builder
	code, err := l.exec(cctx, id, args, nil, nil, &stderr, "session")
	if err != nil {
		return runtime.Member{}, fmt.Errorf("start %s: %w", s.Name, err)
	}
	where := cid
	if s.Beside != "" {
		where = string(s.Beside)
	}
	if code != 0 {
		return runtime.Member{}, fmt.Errorf("start %s in %s: %s (exit code %d)", s.Name, where, lastLine(stderr.String()), code)
	}
	return runtime.Member{Name: s.Name, Role: s.Role, ID: id.String(), Node: node, NetNS: s.Beside}, nil
}

var _ runtime.WireHost = (*Lab)(nil)

// StartHostMember starts member s as a session of the node agent in the
// node's own network namespace (runtime.OnHost), where a node that
// bridges its pods bridges them, or in an empty one (runtime.NoNet). Its
// node is s.Node when set, else that of s.Beside's pod, else the
// cluster's only node.
func (l *Lab) StartHostMember(ctx context.Context, s runtime.MemberSpec, net runtime.HostNet) (runtime.Member, error) {
	l, err := l.inRun(ctx, s.Labels)
	if err != nil {
		return runtime.Member{}, fmt.Errorf("start %s: %w", s.Name, err)
	}
	if errs := validation.IsDNS1123Label(s.Name); len(errs) > 0 {
		return runtime.Member{}, fmt.Errorf("start %s: the name cannot name a session: %s", s.Name, errs[0])
	}
	if len(s.Cmd) == 0 {
		return runtime.Member{}, fmt.Errorf("start %s: a member on a node needs a command", s.Name)
	}
	cid := "host"
	switch net {
	case runtime.OnHost:
	case runtime.NoNet:
		cid = "none"
	default:
		return runtime.Member{}, fmt.Errorf("start %s: network %q: use host or none", s.Name, net)
	}
	node := s.Node
	if node == "" {
		if node, err = l.nodeOf(ctx, s.Beside); err != nil {
			return runtime.Member{}, fmt.Errorf("start %s: %w", s.Name, err)
		}
	}
	return l.runSession(ctx, s, node, cid)
}

// nodeOf is the node of pod beside (namespace/pod), else the cluster's
// only node that takes pods.
func (l *Lab) nodeOf(ctx context.Context, beside runtime.NetNS) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	if beside != "" {
		namespace, pod, err := parseNetNS(beside)
		if err != nil {
			return "", err
		}
		p, err := l.C.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return "", l.podErr("node of", memberID{Namespace: namespace, Pod: pod, Container: "*"}, err)
		}
		if p.Spec.NodeName == "" {
			return "", fmt.Errorf("pod %s is on no node yet", beside)
		}
		return p.Spec.NodeName, nil
	}
	taking, err := l.Hosts(ctx)
	if err != nil {
		return "", err
	}
	if len(taking) != 1 {
		return "", fmt.Errorf("the cluster has %d nodes that take pods (%s): which node's network is meant needs a member beside or a node", len(taking), strings.Join(taking, ", "))
	}
	return taking[0], nil
}

var _ runtime.Hosted = (*Lab)(nil)

// Hosts lists the nodes that take pods (Ready, not cordoned), by name.
func (l *Lab) Hosts(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	nodes, err := l.C.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %s", firstLine(err.Error()))
	}
	return takingPods(nodes.Items), nil
}

// Bridge is netem.BridgeAuto: the wire shaper finds its node's pod
// bridge itself, by the route to the pod it holds.
func (l *Lab) Bridge(string) string { return netem.BridgeAuto }

// targetContainer is the container ID (without its runtime's scheme) of
// a running container of p, whose network namespace is the pod's.
func targetContainer(p *corev1.Pod) (string, error) {
	name := p.Namespace + "/" + p.Name
	if p.Spec.HostNetwork {
		return "", fmt.Errorf("pod %s uses the node's network namespace: an agent beside it would shape the whole node", name)
	}
	if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
		return "", fmt.Errorf("pod %s does not run (%s)", name, strings.ToLower(string(p.Status.Phase)))
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil || cs.ContainerID == "" {
			continue
		}
		_, id, ok := strings.Cut(cs.ContainerID, "://")
		if !ok {
			id = cs.ContainerID
		}
		return id, nil
	}
	return "", fmt.Errorf("pod %s has no running container", name)
}

// boundingSet is setpriv's bounding set of s's capabilities: empty when
// s keeps all of them (the node agent's, which is privileged), else the
// default set of a container with s's added, or s's alone when it drops
// all.
func boundingSet(s runtime.MemberSpec) string {
	if !s.DropAllCaps && len(s.CapAdd) == 0 {
		return ""
	}
	caps := []string{"-all"}
	if !s.DropAllCaps {
		for _, c := range defaultCaps {
			caps = append(caps, "+"+c)
		}
	}
	for _, c := range s.CapAdd {
		caps = append(caps, "+"+strings.ToLower(string(c)))
	}
	return strings.Join(caps, ",")
}

// defaultCaps are the capabilities containerd gives a container.
var defaultCaps = []string{"chown", "dac_override", "fsetid", "fowner", "mknod", "net_raw", "setgid", "setuid", "setfcap", "setpcap", "net_bind_service", "sys_chroot", "kill", "audit_write"}

// nodeAgentName is the name of the node agent pod of image on node.
func nodeAgentName(node, image string) string {
	h := sha256.Sum256([]byte(node + "\x00" + image))
	return "rttlab-node-" + hex.EncodeToString(h[:5])
}

// ensureNodeAgent starts the node agent of image on node in the run's
// namespace unless it runs already, and returns its pod's name.
func (l *Lab) ensureNodeAgent(ctx context.Context, node, image string) (string, error) {
	name := nodeAgentName(node, image)
	labels := l.runLabels(map[string]string{runtime.LabelRole: RoleNodeAgent})
	if len(validation.IsValidLabelValue(node)) == 0 {
		labels[LabelNode] = node
	}
	yes, no := true, false
	grace := int64(5)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			HostPID:                       true,
			HostNetwork:                   true,
			RestartPolicy:                 corev1.RestartPolicyNever,
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			EnableServiceLinks:            &no,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:            nodeAgentContainer,
				Image:           l.Pulled(image),
				Args:            []string{"agent", "idle"},
				ImagePullPolicy: l.pullPolicy(),
				SecurityContext: &corev1.SecurityContext{Privileged: &yes},
			}},
		},
	}
	cctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	if _, err := l.C.CoreV1().Pods(l.Namespace).Create(cctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create pod %s: %s", name, firstLine(err.Error()))
	}
	if _, err := l.waitRunning(ctx, l.Namespace, name, nodeAgentContainer); err != nil {
		return "", fmt.Errorf("pod %s: %w", name, err)
	}
	return name, nil
}

// LabelNode is the node a node agent serves.
const LabelNode = "io.rttlab.node"

// sessionState reads session m's state from its node agent, within ctx
// (State's short call).
func (l *Lab) sessionState(ctx context.Context, m memberID) (runtime.State, error) {
	// The node agent's pod first, from the API: an exec into a pod
	// being deleted may neither answer nor fail, and a session's agent
	// that lost its node agent has ended.
	p, err := l.C.CoreV1().Pods(m.Namespace).Get(ctx, m.Pod, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Killed or evicted: the session ended with it, as a Docker
		// agent's container that was killed has exited.
		return runtime.State{ExitCode: -1, Reason: "exited"}, nil
	case err != nil:
		return runtime.State{}, l.podErr("state", m, err)
	case p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning:
		return runtime.State{ExitCode: -1, Reason: "exited"}, nil
	}
	var out, stderr strings.Builder
	code, err := l.exec(ctx, m, []string{"sh", "-c", sessionStateScript, "sh", m.Session}, nil, &out, &stderr, "state")
	if err != nil {
		if l.podGone(ctx, m) {
			return runtime.State{}, notFound("state " + m.String())
		}
		return runtime.State{}, err
	}
	if code != 0 {
		return runtime.State{}, fmt.Errorf("state %s: %s (exit code %d)", m, lastLine(stderr.String()), code)
	}
	word, rest, _ := strings.Cut(strings.TrimSpace(out.String()), " ")
	switch word {
	case "running":
		return runtime.State{Running: true, Reason: "running"}, nil
	case "exited":
		c, _ := strconv.Atoi(rest)
		return runtime.State{ExitCode: c, Reason: "exited"}, nil
	}
	return runtime.State{}, notFound("state " + m.String())
}

// stopSession ends session m: SIGTERM, SIGKILL after grace, and with
// remove its files too. A node agent gone is a session gone.
func (l *Lab) stopSession(ctx context.Context, m memberID, grace time.Duration, remove bool) error {
	ctx, cancel := context.WithTimeout(ctx, grace+shortCall)
	defer cancel()
	rm := "0"
	if remove {
		rm = "1"
	}
	secs := strconv.Itoa(int((grace + time.Second - 1) / time.Second))
	var stderr strings.Builder
	code, err := l.exec(ctx, m, []string{"sh", "-c", sessionStopScript, "sh", m.Session, secs, rm}, nil, nil, &stderr, "stop")
	if err != nil {
		if l.podGone(ctx, m) {
			return nil
		}
		return err
	}
	if code != 0 {
		return fmt.Errorf("stop %s: %s (exit code %d)", m, lastLine(stderr.String()), code)
	}
	return nil
}

// podGone says whether m's pod is known to be gone.
func (l *Lab) podGone(ctx context.Context, m memberID) bool {
	_, err := l.C.CoreV1().Pods(m.Namespace).Get(ctx, m.Pod, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// lastLine is the last non-blank line of s, trimmed.
func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(ls[len(ls)-1])
}
