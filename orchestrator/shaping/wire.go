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

// wireLabel names an agent's rules in the host's tables; every label of a
// run starts with stack.WireRulePrefix(runID).
func wireLabel(runID, name string) string { return stack.WireRulePrefix(runID) + name }

// startAgent starts the agent of member m: a member beside it, in its
// network namespace, that serves its shaper, or with wire (the userspace
// shaper's wire hook) a member beside it for probes and a shaper in the
// host's network namespace that holds m's packets on the stack's bridge
// (the runtime's runtime.WireHost).
func startAgent(ctx context.Context, d runtime.Members, st *stack.Stack, m *stack.Member, backend, hook string, wire bool) (*Agent, error) {
	labels := stack.RunLabels(st.RunID, nil)
	labels[engine.LabelTarget] = m.ID
	labels[engine.LabelService] = m.Service
	labels[LabelHook] = hook
	spec := runtime.MemberSpec{
		Name:        m.Name + "-agent",
		Role:        "agent",
		Image:       stack.AgentImage,
		Cmd:         agentCmd(backend, hook),
		Labels:      labels,
		Beside:      netNS(m),
		DropAllCaps: true,
		CapAdd:      []runtime.Capability{runtime.CapNetAdmin, runtime.CapNetRaw},
		Platform:    st.Platform.Native().String(),
	}
	if wire {
		spec.Cmd = []string{"agent", "idle"}
	}
	a := &Agent{Target: m, Name: spec.Name}
	am, err := d.StartMember(ctx, spec)
	if am.ID == "" {
		return nil, err
	}
	a.ID = am.ID
	if err != nil || !wire {
		return a, err
	}
	wh, ok := d.(runtime.WireHost)
	if !ok {
		return a, fmt.Errorf("wire shaping of %s: %w", m.Name, stack.ErrNoHostNet)
	}
	ws, err := wireShaperSpec(wh, st, m, labels)
	if err != nil {
		return a, err
	}
	a.CtlName = ws.Name
	wm, err := wh.StartHostMember(ctx, ws, runtime.OnHost)
	a.CtlID = wm.ID
	return a, err
}

// netNS is the network namespace of m an agent joins: the runtime's
// handle, or, for a member known by its ID alone (put together by hand
// rather than started by the runtime), the ID, which names the namespace
// of the Docker runtime's container.
func netNS(m *stack.Member) runtime.NetNS {
	if m.NetNS != "" {
		return m.NetNS
	}
	return runtime.NetNS(m.ID)
}

// wireShaperSpec is the member of m's wire shaper: in the host's network
// namespace with CAP_NET_ADMIN and CAP_NET_RAW, holding what m sends on
// the stack's bridge (the host's interface behind the run's network).
func wireShaperSpec(wh runtime.WireHost, st *stack.Stack, m *stack.Member, agentLabels map[string]string) (runtime.MemberSpec, error) {
	bridge := wh.Bridge(st.NetworkID)
	if bridge == "" {
		return runtime.MemberSpec{}, fmt.Errorf("wire shaping of %s: the stack has no network", m.Name)
	}
	if m.IP == "" {
		return runtime.MemberSpec{}, fmt.Errorf("wire shaping of %s: it has no address on the run's network", m.Name)
	}
	labels := maps.Clone(agentLabels)
	labels[engine.LabelRole] = stack.RoleShaper
	return runtime.MemberSpec{
		Name:  m.Name + "-wire",
		Image: stack.AgentImage,
		Cmd: []string{"agent", "serve", "--shaper", netem.BackendUserspace, "--hook", netem.HookWire,
			"--bridge", bridge, "--src", m.IP, "--label", wireLabel(st.RunID, m.Name)},
		Labels:      labels,
		Beside:      netNS(m), // on m's host (a cluster's node)
		DropAllCaps: true,
		CapAdd:      []runtime.Capability{runtime.CapNetAdmin, runtime.CapNetRaw},
		Platform:    st.Platform.Native().String(),
	}, nil
}

// backendCache holds the backend "auto" resolved to, per runtime and
// host.
var backendCache struct {
	sync.Mutex
	by map[hostOf]string
}

// hostOf is one host of a runtime ("" for the one host of a runtime
// without several).
type hostOf struct {
	d    runtime.Runtime
	host string
}

// resolveBackend turns "auto" into the backend the agents get on hosts
// (the hosts their members run on; "" for the runtime's only one):
// kernel where a member can add a netem qdisc on every one of them, else
// userspace, so that both ends of a path are shaped alike. It asks a
// short-lived agent once per host, runtime and process.
func resolveBackend(ctx context.Context, d runtime.Runtime, backend string, hosts []string) (string, error) {
	if backend != netem.BackendAuto && backend != "" {
		return backend, nil
	}
	if len(hosts) == 0 {
		hosts = []string{""}
	}
	b := netem.BackendKernel
	for _, host := range hosts {
		hb, err := probeBackend(ctx, d, host)
		if err != nil {
			return "", err
		}
		if hb != netem.BackendKernel {
			b = hb
		}
	}
	return b, nil
}

// probeBackend is the backend "auto" resolves to on host.
func probeBackend(ctx context.Context, d runtime.Runtime, host string) (string, error) {
	backendCache.Lock()
	defer backendCache.Unlock()
	key := hostOf{d, host}
	if b := backendCache.by[key]; b != "" {
		return b, nil
	}
	out, code, err := stack.RunAgentOnce(ctx, d, host, "", []string{"netem-probe"}, runtime.NoNet, nil)
	if err != nil {
		return "", fmt.Errorf("probe kernel netem%s: %w", stack.OnHost(host), err)
	}
	var rep struct {
		Kernel bool   `json:"kernel"`
		Why    string `json:"why"`
	}
	if jerr := json.Unmarshal(bytes.TrimSpace(out), &rep); jerr != nil || code != 0 {
		return "", fmt.Errorf("probe kernel netem%s: agent answered %q (exit %d)", stack.OnHost(host), bytes.TrimSpace(out), code)
	}
	b := netem.BackendUserspace
	if rep.Kernel {
		b = netem.BackendKernel
	}
	if backendCache.by == nil {
		backendCache.by = map[hostOf]string{}
	}
	backendCache.by[key] = b
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
