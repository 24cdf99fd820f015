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

	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/workloads"
)

// The load verbs, run in the container that holds the load client: a
// closed-loop load (load), an open-loop load (openloop), a capacity
// search (capacity) and timed TCP connects (connect).

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

// loadTimeout bounds a load of n requests.
func loadTimeout(n int) time.Duration { return time.Duration(n)*30*time.Second + time.Minute }

// Load runs a closed-loop load of paths and returns one result per path.
func (c Client) Load(ctx context.Context, o LoadOptions) ([]workloads.Result, error) {
	n := len(o.Paths)
	res, err := c.Exec(ctx, Call{Verb: "load", Args: LoadArgs(o), Timeout: loadTimeout(n)})
	if err != nil {
		return nil, err
	}
	rs, err := workloads.DecodeResults(bytes.NewReader(res.Stdout))
	if err != nil {
		return nil, fmt.Errorf("load client output: %w", err)
	}
	return rs, loadCount(rs, n)
}

// loadCount says when a load answered another number of results than n.
func loadCount(rs []workloads.Result, n int) error {
	if len(rs) != n {
		return fmt.Errorf("load client returned %d results, want %d", len(rs), n)
	}
	return nil
}

// LoadRun is a load that ran, whatever its exit status: what it printed,
// for a caller that reads it after checks of its own (Results).
type LoadRun struct {
	Output
	// Want is how many results the load answers.
	Want int
}

// RunLoad runs a closed-loop load of o (a route or a mix: its warmup and
// measured requests) and returns what it printed, its exit status left
// to Results; only a failed exec is an error.
func (c Client) RunLoad(ctx context.Context, o LoadOptions) (LoadRun, error) {
	n := o.Requests + o.Warmup
	res, err := c.Exec(ctx, Call{Verb: "load", Args: LoadArgs(o), Timeout: loadTimeout(n), AnyExit: true})
	return LoadRun{Output: res, Want: n}, err
}

// Results decodes the load's results. failed says that the client itself
// failed (an exit status other than 0, or an answer that is not results),
// which a caller may blame on a member of the stack that stopped; an
// answer of another length is an error but no failure of the client.
func (r LoadRun) Results() (rs []workloads.Result, failed bool, err error) {
	rs, derr := workloads.DecodeResults(bytes.NewReader(r.Stdout))
	if r.Code != 0 || derr != nil {
		if derr != nil {
			return nil, true, fmt.Errorf("load client output: %w", derr)
		}
		return nil, true, fmt.Errorf("load client exit %d: %s", r.Code, runtime.LastLines(r.Stderr, 3))
	}
	if err := loadCount(rs, r.Want); err != nil {
		return nil, false, err
	}
	return rs, false, nil
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
	res, err := c.Exec(ctx, Call{Verb: "openloop", Args: OpenLoopArgs(o), Timeout: timeout})
	if err != nil {
		return nil, tot, err
	}
	lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &tot); err != nil {
		return nil, tot, fmt.Errorf("open-loop totals: %w", err)
	}
	rs, err := workloads.DecodeOpenResults(bytes.NewReader(res.Stdout))
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
	res, err := c.Exec(ctx, Call{Verb: "capacity", Args: CapacityArgs(o), Timeout: timeout})
	if err != nil {
		return cp, err
	}
	if err := json.Unmarshal(res.Stdout, &cp); err != nil {
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

// ConnectArgs is the connect verb's command line.
func ConnectArgs(addr string, warmup, count int) []string {
	return []string{"--to", addr, "--warmup", fmt.Sprint(warmup), "--count", fmt.Sprint(count)}
}

// Connect times warmup+count TCP connects to addr (host:port) and returns
// the measured ones in nanoseconds.
func (c Client) Connect(ctx context.Context, addr string, warmup, count int) ([]int64, error) {
	res, err := c.Exec(ctx, Call{Verb: "connect", Args: ConnectArgs(addr, warmup, count), Timeout: time.Duration(warmup+count)*10*time.Second + time.Minute})
	if err != nil {
		return nil, err
	}
	var ans struct {
		Samples []int64 `json:"samples_ns"`
	}
	if err := json.Unmarshal(res.Stdout, &ans); err != nil {
		return nil, fmt.Errorf("connect probe: %w", err)
	}
	return ans.Samples, nil
}
