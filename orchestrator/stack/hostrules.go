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

// StartHelper creates and starts a helper container of spec and returns its
// id (also when the start failed, so that the caller removes it).
func StartHelper(ctx context.Context, d engine.Docker, spec engine.ContainerSpec) (string, error) {
	id, err := d.CreateContainer(ctx, spec)
	if err != nil {
		return "", err
	}
	return id, d.StartContainer(ctx, id)
}

// RunAgentOnce runs `rttlab agent ARGS...` in a short-lived agent
// container (labelled with runID, or a fresh one) with the given network
// mode and extra capabilities besides NET_ADMIN and NET_RAW, and returns
// its standard output and exit code.
func RunAgentOnce(ctx context.Context, d engine.Docker, runID string, args []string, netMode string, stderr *bytes.Buffer) ([]byte, int, error) {
	if runID == "" {
		runID = "once-" + NewRunID()
	}
	labels := RunLabels(runID, nil)
	labels[engine.LabelRole] = engine.RoleOnce
	id, err := StartHelper(ctx, d, engine.ContainerSpec{
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
	res, err := agentclient.Client{D: d, ID: id}.Exec(ctx, agentclient.Call{Verb: args[0], Args: args[1:], Stderr: stderr, Timeout: 30 * time.Second, AnyExit: true})
	return res.Stdout, res.Code, err
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
		prefix = WireRulePrefix(runID)
	}
	args := []string{"sweep", "--label-prefix", prefix}
	what := "sweep wire rules"
	if list {
		args, what = append(args, "--list"), "list wire rules"
	}
	var errb bytes.Buffer
	out, code, err := RunAgentOnce(ctx, d, runID, args, "host", &errb)
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

// AgentImage is the image of agents and load clients.
var AgentImage = engine.ImageRef("agent")

// lastLine is the last non-blank line of s, trimmed.
func lastLine(s string) string { return strings.TrimSpace(engine.LastLines(strings.TrimSpace(s), 1)) }
