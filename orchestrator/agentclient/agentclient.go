// Package agentclient is the controller's one client of the agent: every
// agent verb the lab, the shapers and the studies run in a container
// (`rttlab agent VERB ...`, by exec in an agent, a wire shaper or a load
// client) goes through it. Each verb family has a typed call in a file of
// its own, which builds the verb's command line and decodes its answer in
// one place: the shaper's control (ctl.go), the ICMP probe (ping.go), the
// SELECT 1 probe (sqlprobe.go), the packet capture (capture.go), the
// request trace (trace.go), the loads (load.go: load, openloop, capacity,
// connect) and the long-lived session (session.go). All of them run by one
// path, Client.Exec, which asks of the runtime only an exec (Execer).
package agentclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// Execer runs a command in a container and returns its exit status: all
// the client asks of a runtime (engine.Containers has it).
type Execer interface {
	Exec(ctx context.Context, id string, spec runtime.ExecSpec) (int, error)
}

// AgentBin is the rttlab binary in the agent image.
const AgentBin = "/usr/local/bin/rttlab"

// AgentCommand is `rttlab agent args...` as it runs in an agent's
// container: every exec of an agent verb builds its line here.
func AgentCommand(args ...string) []string {
	return append([]string{AgentBin, "agent"}, args...)
}

// Client runs agent verbs in one container.
type Client struct {
	D  Execer
	ID string
	// Name is the container's name, as the errors of the shapers' verbs
	// (ctl, ping, sqlprobe, capture, trace) name it.
	Name string
	// Alive, when set, is asked after every call: a member or agent of
	// the stack that died during the call fails it, with its reason,
	// before the answer is read.
	Alive func(ctx context.Context) error
}

// Call is one run of an agent verb: its arguments, its input, where its
// output goes and how long it may take.
type Call struct {
	Verb string
	Args []string
	// Env is environment of the verb's own (the SQL probe's connection).
	Env []string
	// Stdin, when set, is the verb's input; a verb that stops at its end
	// (capture, session) runs until it closes.
	Stdin io.Reader
	// Stdout and Stderr, when set, get the verb's output as it comes;
	// the Output then holds none of that stream.
	Stdout, Stderr io.Writer
	// Timeout bounds the exec (zero: the runtime's short default).
	Timeout time.Duration
	// AnyExit leaves the exit status to the caller: Exec returns it in
	// the Output, with no error.
	AnyExit bool
}

// Command is the call's command line.
func (c Call) Command() []string { return AgentCommand(append([]string{c.Verb}, c.Args...)...) }

// Output is what a verb printed and its exit status.
type Output struct {
	Code   int
	Stdout []byte
	Stderr string
}

// ExitError is a verb that exited with a status other than 0.
type ExitError struct {
	Verb string
	Output
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("agent %s exit %d: %s", e.Verb, e.Code, runtime.LastLines(e.Stderr, 3))
}

// Exec runs `rttlab agent VERB ARGS...` of call in the client's container
// and returns what it printed and its exit status. A failed exec is an
// error; so is, after the liveness watch (Alive) when set, an exit status
// other than 0 (unless call.AnyExit): an *ExitError naming the verb with
// the last lines of stderr, returned with the output.
func (c Client) Exec(ctx context.Context, call Call) (Output, error) {
	var out, errb bytes.Buffer
	spec := runtime.ExecSpec{Cmd: call.Command(), Env: call.Env, Stdin: call.Stdin, Stdout: &out, Stderr: &errb, Timeout: call.Timeout}
	if call.Stdout != nil {
		spec.Stdout = call.Stdout
	}
	if call.Stderr != nil {
		spec.Stderr = call.Stderr
	}
	code, err := c.D.Exec(ctx, c.ID, spec)
	if err != nil {
		return Output{Code: code}, err
	}
	if c.Alive != nil {
		if err := c.Alive(ctx); err != nil {
			return Output{Code: code}, err
		}
	}
	res := Output{Code: code, Stdout: out.Bytes(), Stderr: errb.String()}
	if code != 0 && !call.AnyExit {
		return res, &ExitError{Verb: call.Verb, Output: res}
	}
	return res, nil
}
