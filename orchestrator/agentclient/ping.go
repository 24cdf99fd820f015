package agentclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rttlab/rttlab/workloads"
)

// PingOptions is an ICMP probe (`agent ping`) from the client's
// container to the address To: Count echoes Interval apart, timed on the
// wire (the reply's kernel stamp) or by the process that reads it
// (Timing "wire" or "process").
type PingOptions struct {
	To       string
	Count    int
	Interval time.Duration
	Timing   string
}

// PingArgs is the ping verb's command line for o.
func PingArgs(o PingOptions) []string {
	return []string{"--to", o.To, "--count", fmt.Sprint(o.Count), "--interval", o.Interval.String(), "--timing", o.Timing}
}

// Ping runs the ICMP probe and decodes its figures.
func (c Client) Ping(ctx context.Context, o PingOptions) (workloads.PingResult, error) {
	var pr workloads.PingResult
	res, err := c.Exec(ctx, Call{Verb: "ping", Args: PingArgs(o), AnyExit: true,
		Timeout: time.Duration(o.Count)*(o.Interval+workloads.EchoTimeout) + 30*time.Second})
	if err != nil {
		return pr, err
	}
	if res.Code != 0 {
		return pr, fmt.Errorf("ping from %s: %s", c.Name, strings.TrimSpace(res.Stderr))
	}
	if err := json.Unmarshal(res.Stdout, &pr); err != nil {
		return pr, fmt.Errorf("ping from %s: %w", c.Name, err)
	}
	return pr, nil
}
