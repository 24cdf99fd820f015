// Package agentclient is the studies' side of the agent's load verbs: one
// typed call per verb (load, openloop, capacity, connect), each building
// its command line and decoding its answer in one place, run by docker
// exec in the container that holds the load client. The RTT study runs
// its load under its own watch of the stack (rtt), with the line LoadArgs
// builds. The shapers' verbs (ctl, ping, sqlprobe, capture, trace) are
// orchestrator/shaping's.
package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/workloads"
)

// Client runs agent verbs in one container.
type Client struct {
	D  engine.Containers
	ID string
	// Alive, when set, is asked after every call: a member or agent of
	// the stack that died during the call fails it, with its reason,
	// before the answer is read.
	Alive func(ctx context.Context) error
}

// Run runs `rttlab agent verb args...` and returns what it printed on
// stdout and stderr; an exit status other than 0 is an error naming the
// verb with the last lines of stderr (which is returned too).
func (c Client) Run(ctx context.Context, timeout time.Duration, verb string, args ...string) ([]byte, string, error) {
	var out, errb bytes.Buffer
	code, err := c.D.Exec(ctx, c.ID, engine.ExecSpec{Cmd: stack.AgentCommand(append([]string{verb}, args...)...), Stdout: &out, Stderr: &errb, Timeout: timeout})
	if err != nil {
		return nil, "", err
	}
	if c.Alive != nil {
		if err := c.Alive(ctx); err != nil {
			return nil, "", err
		}
	}
	if code != 0 {
		return nil, errb.String(), fmt.Errorf("agent %s exit %d: %s", verb, code, engine.LastLines(errb.String(), 3))
	}
	return out.Bytes(), errb.String(), nil
}

// LoadOptions is a closed-loop load on one kept-alive connection, or a
// new connection per request: the paths in order (warmup first), or
// Requests measured requests of one route or of a mix (rttlab's by name,
// or a user's as JSON) drawn from Seed.
type LoadOptions struct {
	URL     string
	Paths   []string
	Warmup  int
	NewConn bool
	// Requests is the measured requests of a Route, Mix or MixJSON load
	// (none with Paths).
	Requests int
	Route    string
	Mix      string
	MixJSON  string
	// Seed is the mix's seed, as the verb's flag takes it.
	Seed string
	// Headers are extra request headers, "Name: value".
	Headers []string
}

// LoadArgs is the load verb's command line for o.
func LoadArgs(o LoadOptions) []string {
	args := []string{"--url", o.URL, "--warmup", fmt.Sprint(o.Warmup)}
	if o.Requests > 0 {
		args = append(args, "--requests", fmt.Sprint(o.Requests))
	}
	if o.NewConn {
		args = append(args, "--new-conn")
	}
	switch {
	case o.Route != "":
		args = append(args, "--route", o.Route)
	case o.Mix != "":
		args = append(args, "--mix", o.Mix, "--seed", o.Seed)
	case o.MixJSON != "":
		args = append(args, "--mix-json", o.MixJSON, "--seed", o.Seed)
	}
	args = append(args, PathArgs(o.Paths)...)
	for _, h := range o.Headers {
		args = append(args, "--header", h)
	}
	return args
}

// Load runs a closed-loop load and returns one result per path.
func (c Client) Load(ctx context.Context, o LoadOptions) ([]workloads.Result, error) {
	out, _, err := c.Run(ctx, time.Duration(len(o.Paths))*30*time.Second+time.Minute, "load", LoadArgs(o)...)
	if err != nil {
		return nil, err
	}
	rs, err := workloads.DecodeResults(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("load client output: %w", err)
	}
	if len(rs) != len(o.Paths) {
		return nil, fmt.Errorf("load client returned %d results, want %d", len(rs), len(o.Paths))
	}
	return rs, nil
}

// OpenLoopArgs is the openloop verb's command line for o (its request
// list as paths; headers sorted, so that the line is the same for the
// same options).
func OpenLoopArgs(o workloads.OpenLoopOptions) []string {
	args := []string{"--url", o.BaseURL, "--rate", strconv.FormatFloat(o.Rate, 'f', -1, 64),
		"--count", fmt.Sprint(o.Count), "--warmup", fmt.Sprint(o.Warmup), "--seed", fmt.Sprint(o.Seed)}
	if o.Timeout > 0 {
		args = append(args, "--timeout", o.Timeout.String())
	}
	if o.NewConnPerRequest {
		args = append(args, "--new-conn")
	}
	for _, h := range o.CopyHeaders {
		args = append(args, "--copy-header", h)
	}
	keys := make([]string, 0, len(o.Header))
	for k := range o.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--header", k+": "+o.Header[k])
	}
	for _, r := range o.Requests {
		args = append(args, "--path", r.Path)
	}
	return args
}

// OpenLoop runs an open-loop load and returns its results and the
// generator's totals (the last line of its stderr).
func (c Client) OpenLoop(ctx context.Context, o workloads.OpenLoopOptions, timeout time.Duration) ([]workloads.OpenResult, workloads.OpenTotals, error) {
	var tot workloads.OpenTotals
	out, stderr, err := c.Run(ctx, timeout, "openloop", OpenLoopArgs(o)...)
	if err != nil {
		return nil, tot, err
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &tot); err != nil {
		return nil, tot, fmt.Errorf("open-loop totals: %w", err)
	}
	rs, err := workloads.DecodeOpenResults(bytes.NewReader(out))
	if err != nil {
		return nil, tot, fmt.Errorf("open-loop output: %w", err)
	}
	return rs, tot, nil
}

// CapacityOptions is a capacity search of one origin for a request list.
type CapacityOptions struct {
	URL       string
	Paths     []string
	Count     int
	MaxP99    time.Duration
	NewConn   bool
	Timeout   time.Duration
	Seed      uint64
	MaxTrials int
}

// CapacityArgs is the capacity verb's command line for o.
func CapacityArgs(o CapacityOptions) []string {
	args := []string{"--url", o.URL, "--count", fmt.Sprint(o.Count), "--max-p99", o.MaxP99.String()}
	if o.NewConn {
		args = append(args, "--new-conn")
	}
	args = append(args, "--timeout", o.Timeout.String(), "--seed", fmt.Sprint(o.Seed), "--max-trials", fmt.Sprint(o.MaxTrials))
	return append(args, PathArgs(o.Paths)...)
}

// Capacity runs a capacity search; a search that sustained no rate is an
// error with the generator's reason.
func (c Client) Capacity(ctx context.Context, o CapacityOptions, timeout time.Duration) (workloads.Capacity, error) {
	var cp workloads.Capacity
	out, _, err := c.Run(ctx, timeout, "capacity", CapacityArgs(o)...)
	if err != nil {
		return cp, err
	}
	if err := json.Unmarshal(out, &cp); err != nil {
		return cp, fmt.Errorf("capacity output: %w", err)
	}
	if !(cp.Rate > 0) {
		return cp, fmt.Errorf("no rate was sustained (%s)", cp.Warning)
	}
	return cp, nil
}

// PathArgs is a --path flag per path.
func PathArgs(paths []string) []string {
	out := make([]string, 0, 2*len(paths))
	for _, p := range paths {
		out = append(out, "--path", p)
	}
	return out
}

// Connect times warmup+count TCP connects to addr (host:port) and returns
// the measured ones in nanoseconds.
func (c Client) Connect(ctx context.Context, addr string, warmup, count int) ([]int64, error) {
	out, _, err := c.Run(ctx, time.Duration(warmup+count)*10*time.Second+time.Minute, "connect", "--to", addr, "--warmup", fmt.Sprint(warmup), "--count", fmt.Sprint(count))
	if err != nil {
		return nil, err
	}
	var res struct {
		Samples []int64 `json:"samples_ns"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("connect probe: %w", err)
	}
	return res.Samples, nil
}
