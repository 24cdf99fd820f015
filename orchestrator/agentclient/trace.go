package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rttlab/rttlab/workloads"
)

// TraceOptions is a request trace (`agent trace`) from inside the app's
// network namespace: Requests sent to the app at URL, one after the
// other, each with the database round trips on the wire to DB
// (host:port), its statements and Parse messages counted.
type TraceOptions struct {
	DB       string
	URL      string
	Header   []string
	Requests []workloads.Request
}

// TraceArgs is the trace verb's command line for o (its requests go on
// its input).
func TraceArgs(o TraceOptions) []string {
	args := []string{"--db", o.DB, "--url", o.URL}
	for _, h := range o.Header {
		args = append(args, "--header", h)
	}
	return args
}

// traceInput is the trace's input: a JSON line per request.
func traceInput(reqs []workloads.Request) *bytes.Buffer {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, r := range reqs {
		enc.Encode(r)
	}
	return &in
}

// Trace runs the trace and decodes a result per request.
func (c Client) Trace(ctx context.Context, o TraceOptions) ([]workloads.TraceResult, error) {
	res, err := c.Exec(ctx, Call{Verb: "trace", Args: TraceArgs(o), Stdin: traceInput(o.Requests), Timeout: 20 * time.Minute, AnyExit: true})
	if err != nil {
		return nil, err
	}
	if res.Code != 0 {
		return nil, fmt.Errorf("trace in %s: %s", c.Name, strings.TrimSpace(res.Stderr))
	}
	var out []workloads.TraceResult
	dec := json.NewDecoder(bytes.NewReader(res.Stdout))
	for dec.More() {
		var r workloads.TraceResult
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("trace output: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}
