package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
)

// LabelHook, on agents, is the userspace shaper's hook they were started
// with. The wire hook holds packets on the run's bridge in the engine
// host's network namespace, from a shaper container on the host's
// network.
const LabelHook = "io.rttlab.hook"

// bridgeOf is the name of the Linux bridge behind a Docker bridge
// network that rttlab created (no com.docker.network.bridge.name option):
// "br-" and the network ID's first 12 characters.
func bridgeOf(networkID string) string {
	return "br-" + networkID[:min(12, len(networkID))]
}

// wireLabel names an agent's rules in the host's tables; every label of a
// run starts with wireRunPrefix(runID).
func wireLabel(runID, name string) string { return wireRunPrefix(runID) + name }

func wireRunPrefix(runID string) string { return runID + "/" }

// roleShaper is the role of a wire shaper's container; a short-lived
// agent that answers one question has engine.RoleOnce.
const roleShaper = "shaper"

// startAgent starts the agent of member m: a sidecar in its network
// namespace that serves its shaper, or with wire (the userspace shaper's
// wire hook) a sidecar for probes and a shaper container on the host's
// network that holds m's packets on the stack's bridge.
func startAgent(ctx context.Context, d engine.Docker, st *Stack, m *Member, backend, hook string, wire bool) (*Agent, error) {
	labels := RunLabels(st.RunID, nil)
	labels[engine.LabelRole] = "agent"
	labels[engine.LabelTarget] = m.ID
	labels[engine.LabelService] = m.Service
	labels[LabelHook] = hook
	spec := engine.ContainerSpec{
		Name:        m.Name + "-agent",
		Image:       AgentImage,
		Cmd:         agentCmd(backend, hook),
		Labels:      labels,
		NetworkMode: "container:" + m.ID,
		CapDrop:     []string{"ALL"},
		CapAdd:      []string{"NET_ADMIN", "NET_RAW"},
	}
	if wire {
		spec.Cmd = []string{"agent", "idle"}
	}
	a := &Agent{Target: m, Name: spec.Name}
	id, err := startContainer(ctx, d, spec)
	if id == "" {
		return nil, err
	}
	a.ID = id
	if err != nil || !wire {
		return a, err
	}
	ws, err := wireShaperSpec(st, m, labels)
	if err != nil {
		return a, err
	}
	a.CtlName = ws.Name
	a.CtlID, err = startContainer(ctx, d, ws)
	return a, err
}

func startContainer(ctx context.Context, d engine.Docker, spec engine.ContainerSpec) (string, error) {
	id, err := d.CreateContainer(ctx, spec)
	if err != nil {
		return "", err
	}
	return id, d.StartContainer(ctx, id)
}

// wireShaperSpec is the container of m's wire shaper: on the host's
// network with CAP_NET_ADMIN and CAP_NET_RAW, holding what m sends on the
// stack's bridge.
func wireShaperSpec(st *Stack, m *Member, agentLabels map[string]string) (engine.ContainerSpec, error) {
	if st.NetworkID == "" {
		return engine.ContainerSpec{}, fmt.Errorf("wire shaping of %s: the stack has no network", m.Name)
	}
	if m.IP == "" {
		return engine.ContainerSpec{}, fmt.Errorf("wire shaping of %s: it has no address on the run's network", m.Name)
	}
	labels := maps.Clone(agentLabels)
	labels[engine.LabelRole] = roleShaper
	return engine.ContainerSpec{
		Name:  m.Name + "-wire",
		Image: AgentImage,
		Cmd: []string{"agent", "serve", "--shaper", netem.BackendUserspace, "--hook", netem.HookWire,
			"--bridge", bridgeOf(st.NetworkID), "--src", m.IP, "--label", wireLabel(st.RunID, m.Name)},
		Labels:      labels,
		NetworkMode: "host",
		CapDrop:     []string{"ALL"},
		CapAdd:      []string{"NET_ADMIN", "NET_RAW"},
	}, nil
}

// backendCache holds the backend "auto" resolved to, per engine client.
var backendCache struct {
	sync.Mutex
	by map[engine.Docker]string
}

// resolveBackend turns "auto" into the backend an agent gets on this
// engine's host: kernel where a container can add a netem qdisc, else
// userspace. It asks a short-lived agent container once per process.
func resolveBackend(ctx context.Context, d engine.Docker, backend string) (string, error) {
	if backend != netem.BackendAuto && backend != "" {
		return backend, nil
	}
	backendCache.Lock()
	defer backendCache.Unlock()
	if b := backendCache.by[d]; b != "" {
		return b, nil
	}
	out, code, err := runAgentOnce(ctx, d, "", []string{"netem-probe"}, "none", nil)
	if err != nil {
		return "", fmt.Errorf("probe kernel netem: %w", err)
	}
	var rep struct {
		Kernel bool   `json:"kernel"`
		Why    string `json:"why"`
	}
	if jerr := json.Unmarshal(bytes.TrimSpace(out), &rep); jerr != nil || code != 0 {
		return "", fmt.Errorf("probe kernel netem: agent answered %q (exit %d)", bytes.TrimSpace(out), code)
	}
	b := netem.BackendUserspace
	if rep.Kernel {
		b = netem.BackendKernel
	}
	if backendCache.by == nil {
		backendCache.by = map[engine.Docker]string{}
	}
	backendCache.by[d] = b
	return b, nil
}

// runAgentOnce runs `rttlab agent ARGS...` in a short-lived agent
// container (labelled with runID, or a fresh one) with the given network
// mode and extra capabilities besides NET_ADMIN and NET_RAW, and returns
// its standard output and exit code.
func runAgentOnce(ctx context.Context, d engine.Docker, runID string, args []string, netMode string, stderr *bytes.Buffer) ([]byte, int, error) {
	if runID == "" {
		runID = "once-" + NewRunID()
	}
	labels := RunLabels(runID, nil)
	labels[engine.LabelRole] = engine.RoleOnce
	id, err := startContainer(ctx, d, engine.ContainerSpec{
		Name:        "rttlab-" + args[0] + "-" + NewRunID(),
		Image:       AgentImage,
		Cmd:         []string{"agent", "idle"},
		Labels:      labels,
		NetworkMode: netMode,
		CapDrop:     []string{"ALL"},
		CapAdd:      []string{"NET_ADMIN", "NET_RAW"},
	})
	if id != "" {
		defer func() { _ = d.RemoveContainer(context.WithoutCancel(ctx), id) }()
	}
	if err != nil {
		return nil, 0, err
	}
	if stderr == nil {
		stderr = &bytes.Buffer{}
	}
	var out bytes.Buffer
	code, err := d.Exec(ctx, id, engine.ExecSpec{
		Cmd:    append([]string{"/usr/local/bin/rttlab", "agent"}, args...),
		Stdout: &out, Stderr: stderr, Timeout: 30 * time.Second,
	})
	return out.Bytes(), code, err
}

// SweepWireRules removes from the engine host's tables the wire shaper
// rules of a run (every run's when runID is empty), through a short-lived
// agent container on the host's network: the rules a shaper killed with
// SIGKILL left behind. It returns how many it removed. Without the agent
// image there is nothing any agent could have added.
func SweepWireRules(ctx context.Context, d engine.Docker, runID string) (int, error) {
	rules, err := wireRules(ctx, d, runID, false)
	return len(rules), err
}

// ListWireRules lists the wire shaper rules of a run (every run's when
// runID is empty) in the engine host's tables, removing nothing.
func ListWireRules(ctx context.Context, d engine.Docker, runID string) ([]string, error) {
	return wireRules(ctx, d, runID, true)
}

func wireRules(ctx context.Context, d engine.Docker, runID string, list bool) ([]string, error) {
	if _, err := d.ImageID(ctx, AgentImage); errors.Is(err, engine.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	prefix := ""
	if runID != "" {
		prefix = wireRunPrefix(runID)
	}
	args := []string{"sweep", "--label-prefix", prefix}
	what := "sweep wire rules"
	if list {
		args, what = append(args, "--list"), "list wire rules"
	}
	var errb bytes.Buffer
	out, code, err := runAgentOnce(ctx, d, runID, args, "host", &errb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var rep struct {
		Removed []string `json:"removed"`
		Found   []string `json:"found"`
	}
	_ = json.Unmarshal(bytes.TrimSpace(out), &rep)
	rules := rep.Removed
	if list {
		rules = rep.Found
	}
	if code != 0 {
		return rules, fmt.Errorf("%s: %s", what, lastLine(errb.String()))
	}
	return rules, nil
}

func lastLine(s string) string { return strings.TrimSpace(engine.LastLines(strings.TrimSpace(s), 1)) }

// ValidHook checks a userspace shaper hook name ("" is the default, wire).
func ValidHook(hook string) error {
	switch hook {
	case "", netem.HookWire, netem.HookIngress, netem.HookEgress:
		return nil
	}
	return fmt.Errorf("hook %q: use wire (the default), ingress or egress", hook)
}
