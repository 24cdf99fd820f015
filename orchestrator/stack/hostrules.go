package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// The helpers every run starts besides its nodes are agent containers;
// the wire shapers among them add rules to the engine host's tables that
// carry the run's label, and removing a run sweeps those too.

// WireRulePrefix starts the comment label of every wire shaper rule of
// a run: the rules of run ID are found and swept by it.
func WireRulePrefix(runID string) string { return runID + "/" }

// RoleShaper is the role of a wire shaper's container; a short-lived
// agent that answers one question has engine.RoleOnce.
const RoleShaper = "shaper"

// ErrNoHostNet refuses what needs a member on the host's network (the
// wire shaper, its rules' sweep) on a runtime without one
// (runtime.WireHost).
var ErrNoHostNet = errors.New("the runtime starts no member on the host's network")

// RunAgentOnce runs `rttlab agent ARGS...` in a short-lived agent member
// (labelled with runID, or a fresh one) on host node (empty: the
// runtime's only one) in the host's network namespace or an empty one,
// with NET_ADMIN and NET_RAW, and returns its standard output and exit
// code. The runtime needs runtime.WireHost.
func RunAgentOnce(ctx context.Context, d runtime.Runtime, node, runID string, args []string, net runtime.HostNet, stderr *bytes.Buffer) ([]byte, int, error) {
	wh, ok := d.(runtime.WireHost)
	if !ok {
		return nil, 0, fmt.Errorf("agent %s: %w", args[0], ErrNoHostNet)
	}
	if runID == "" {
		// A run of its own, removed with the member: on a cluster the
		// run is a namespace, which the member's removal leaves.
		runID = "once-" + NewRunID()
		defer func() { _, _ = d.RemoveRun(context.WithoutCancel(ctx), runID) }()
	}
	labels := RunLabels(runID, nil)
	labels[engine.LabelRole] = engine.RoleOnce
	m, err := wh.StartHostMember(ctx, runtime.MemberSpec{
		Name:        "rttlab-" + args[0] + "-" + NewRunID(),
		Image:       AgentImage,
		Cmd:         []string{"agent", "idle"},
		Labels:      labels,
		Node:        node,
		DropAllCaps: true,
		CapAdd:      []runtime.Capability{runtime.CapNetAdmin, runtime.CapNetRaw},
	}, net)
	id := m.ID
	if id != "" {
		defer func() { _ = d.RemoveMember(context.WithoutCancel(ctx), id) }()
	}
	if err != nil {
		return nil, 0, err
	}
	if stderr == nil {
		stderr = &bytes.Buffer{}
	}
	res, err := agentclient.Client{D: d, ID: id}.Exec(ctx, agentclient.Call{Verb: args[0], Args: args[1:], Stderr: stderr, Timeout: 30 * time.Second, AnyExit: true})
	return res.Stdout, res.Code, err
}

// SweepWireRules removes from the engine host's tables (each host's, on a
// runtime.Hosted) the wire shaper rules of a run (every run's when runID
// is empty), through a short-lived agent on the host's network: the
// rules a shaper killed with SIGKILL left behind. It returns how many it
// removed. Without the agent image,
// or on a runtime with no host network (runtime.WireHost), there is
// nothing any agent could have added.
func SweepWireRules(ctx context.Context, d runtime.Runtime, runID string) (int, error) {
	rules, err := wireRules(ctx, d, runID, false)
	return len(rules), err
}

// ListWireRules lists the wire shaper rules of a run (every run's when
// runID is empty) in the engine host's tables, removing nothing.
func ListWireRules(ctx context.Context, d runtime.Runtime, runID string) ([]string, error) {
	return wireRules(ctx, d, runID, true)
}

func wireRules(ctx context.Context, d runtime.Runtime, runID string, list bool) ([]string, error) {
	if _, ok := d.(runtime.WireHost); !ok {
		return nil, nil
	}
	if ok, err := d.HasImage(ctx, AgentImage); err != nil {
		return nil, err
	} else if !ok {
		return nil, nil
	}
	prefix := ""
	if runID != "" {
		prefix = WireRulePrefix(runID)
	}
	args := []string{"sweep", "--label-prefix", prefix}
	what := "sweep wire rules"
	if list {
		args, what = append(args, "--list"), "list wire rules"
	}
	hosts, err := hostsOf(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var rules []string
	var errs []error
	for _, host := range hosts {
		var errb bytes.Buffer
		out, code, err := RunAgentOnce(ctx, d, host, runID, args, runtime.OnHost, &errb)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%s: %w", what, OnHost(host), err))
			continue
		}
		var rep struct {
			Removed []string `json:"removed"`
			Found   []string `json:"found"`
		}
		_ = json.Unmarshal(bytes.TrimSpace(out), &rep)
		if list {
			rules = append(rules, rep.Found...)
		} else {
			rules = append(rules, rep.Removed...)
		}
		if code != 0 {
			errs = append(errs, fmt.Errorf("%s%s: %s", what, OnHost(host), lastLine(errb.String())))
		}
	}
	return rules, errors.Join(errs...)
}

// hostsOf lists the hosts of runtime d that take members
// (runtime.Hosted), or the one host of a runtime without several, named
// "".
func hostsOf(ctx context.Context, d runtime.Runtime) ([]string, error) {
	h, ok := d.(runtime.Hosted)
	if !ok {
		return []string{""}, nil
	}
	hosts, err := h.Hosts(ctx)
	if err == nil && len(hosts) == 0 {
		err = errors.New("no host takes members")
	}
	return hosts, err
}

// OnHost names host in a message: " on node N", or nothing for the one
// host.
func OnHost(host string) string {
	if host == "" {
		return ""
	}
	return " on node " + host
}

// AgentImage is the image of agents and load clients.
var AgentImage = engine.ImageRef("agent")

// lastLine is the last non-blank line of s, trimmed.
func lastLine(s string) string { return strings.TrimSpace(runtime.LastLines(strings.TrimSpace(s), 1)) }
