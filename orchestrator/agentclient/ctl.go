package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rttlab/rttlab/netem"
)

// CtlOptions is one operation of the shaper's control (`agent ctl`):
// show, set, clear or ping, with its flags in the caller's order.
type CtlOptions struct {
	Op   string
	Args []string
}

// CtlArgs is the ctl verb's command line for o.
func CtlArgs(o CtlOptions) []string { return append([]string{o.Op}, o.Args...) }

// Ctl runs an operation of the shaper's control in the client's
// container (the agent's sidecar, or its wire shaper) and decodes the
// shaper's reply. A failed operation is an error naming the container
// with the shaper's refusal (the reply's error, else stderr), returned
// with the reply it printed.
func (c Client) Ctl(ctx context.Context, o CtlOptions) (netem.Reply, error) {
	res, err := c.Exec(ctx, Call{Verb: "ctl", Args: CtlArgs(o), Timeout: 30 * time.Second, AnyExit: true})
	if err != nil {
		return netem.Reply{}, err
	}
	var rep netem.Reply
	if jerr := json.Unmarshal(bytes.TrimSpace(res.Stdout), &rep); jerr != nil && res.Code == 0 {
		return rep, fmt.Errorf("agent %s: bad reply %q: %w", c.Name, res.Stdout, jerr)
	}
	if res.Code != 0 {
		msg := strings.TrimSpace(res.Stderr)
		if rep.Error != "" {
			msg = rep.Error
		}
		if msg == "" {
			msg = fmt.Sprintf("agent ctl %s exited %d with no output", o.Op, res.Code)
		}
		return rep, fmt.Errorf("agent %s: %s", c.Name, strings.TrimPrefix(msg, "rttlab: "))
	}
	return rep, nil
}
