package shaping

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/stack"
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
// run starts with stack.WireRulePrefix(runID).
func wireLabel(runID, name string) string { return stack.WireRulePrefix(runID) + name }

// startAgent starts the agent of member m: a sidecar in its network
// namespace that serves its shaper, or with wire (the userspace shaper's
// wire hook) a sidecar for probes and a shaper container on the host's
// network that holds m's packets on the stack's bridge.
func startAgent(ctx context.Context, d engine.Docker, st *stack.Stack, m *stack.Member, backend, hook string, wire bool) (*Agent, error) {
	labels := stack.RunLabels(st.RunID, nil)
	labels[engine.LabelRole] = "agent"
	labels[engine.LabelTarget] = m.ID
	labels[engine.LabelService] = m.Service
	labels[LabelHook] = hook
	spec := engine.ContainerSpec{
		Name:        m.Name + "-agent",
		Image:       stack.AgentImage,
		Cmd:         agentCmd(backend, hook),
		Labels:      labels,
		NetworkMode: "container:" + m.ID,
		CapDrop:     []string{"ALL"},
		CapAdd:      []string{"NET_ADMIN", "NET_RAW"},
		Platform:    st.Platform.Native(),
	}
	if wire {
		spec.Cmd = []string{"agent", "idle"}
	}
	a := &Agent{Target: m, Name: spec.Name}
	id, err := stack.StartHelper(ctx, d, spec)
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
	a.CtlID, err = stack.StartHelper(ctx, d, ws)
	return a, err
}

// wireShaperSpec is the container of m's wire shaper: on the host's
// network with CAP_NET_ADMIN and CAP_NET_RAW, holding what m sends on the
// stack's bridge.
func wireShaperSpec(st *stack.Stack, m *stack.Member, agentLabels map[string]string) (engine.ContainerSpec, error) {
	if st.NetworkID == "" {
		return engine.ContainerSpec{}, fmt.Errorf("wire shaping of %s: the stack has no network", m.Name)
	}
	if m.IP == "" {
		return engine.ContainerSpec{}, fmt.Errorf("wire shaping of %s: it has no address on the run's network", m.Name)
	}
	labels := maps.Clone(agentLabels)
	labels[engine.LabelRole] = stack.RoleShaper
	return engine.ContainerSpec{
		Name:  m.Name + "-wire",
		Image: stack.AgentImage,
		Cmd: []string{"agent", "serve", "--shaper", netem.BackendUserspace, "--hook", netem.HookWire,
			"--bridge", bridgeOf(st.NetworkID), "--src", m.IP, "--label", wireLabel(st.RunID, m.Name)},
		Labels:      labels,
		NetworkMode: "host",
		CapDrop:     []string{"ALL"},
		CapAdd:      []string{"NET_ADMIN", "NET_RAW"},
		Platform:    st.Platform.Native(),
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
	out, code, err := stack.RunAgentOnce(ctx, engine.NewLab(d, ""), "", []string{"netem-probe"}, runtime.NoNet, nil)
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

// ValidHook checks a userspace shaper hook name ("" is the default, wire).
func ValidHook(hook string) error {
	switch hook {
	case "", netem.HookWire, netem.HookIngress, netem.HookEgress:
		return nil
	}
	return fmt.Errorf("hook %q: use wire (the default), ingress or egress", hook)
}
