// Package fakes holds what the lab's in-memory doubles (the fake engine,
// enginefake, and the runtime double, runtimefake) do alike: how a
// command line picks its exec handler, which a lab scripting both
// doubles with one set of handlers relies on, how an armed failure
// fires, how a label filter matches, and how an agent session is
// served.
package fakes

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rttlab/rttlab/internal/session"
)

// CommandKey is how handlers see a command line: its words joined by
// spaces, /usr/local/bin/rttlab written rttlab.
func CommandKey(cmd []string) string {
	parts := append([]string(nil), cmd...)
	if len(parts) > 0 && parts[0] == "/usr/local/bin/rttlab" {
		parts[0] = "rttlab"
	}
	return strings.Join(parts, " ")
}

// Handler returns the handler of the longest prefix of key, whole words,
// among handlers, that prefix, and whether one matched.
func Handler[H any](handlers map[string]H, key string) (prefix string, h H, ok bool) {
	for p, ph := range handlers {
		if (key == p || strings.HasPrefix(key, p+" ")) && len(p) >= len(prefix) {
			prefix, h, ok = p, ph, true
		}
	}
	return prefix, h, ok
}

// Armed is when a double's armed failure fires: on a call of Op (a
// crash: none), whose subject Match names ("" any), Times more times
// (negative: every time).
type Armed struct {
	Op, Match string
	Times     int
}

// Fire says whether a fires on a call of op, matches saying whether
// a.Match names the call's subject; when it fires, one of its times is
// used up.
func (a *Armed) Fire(op string, matches func(match string) bool) bool {
	if a.Op != op || a.Times == 0 || !matches(a.Match) {
		return false
	}
	if a.Times > 0 {
		a.Times--
	}
	return true
}

// LabelsMatch says whether have carries every label of want, an empty
// value of want matching any value.
func LabelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		got, ok := have[k]
		if !ok || (v != "" && got != v) {
			return false
		}
	}
	return true
}

// ExecFunc runs cmd as an exec of its own in the member a session runs in.
type ExecFunc func(ctx context.Context, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)

// ServeSession serves an agent session read from in, its frames written
// to out: each call it is sent runs through exec as bin's agent verb with
// the call's arguments; an exec that fails prints its error on the call's
// stderr and exits -1.
func ServeSession(ctx context.Context, in io.Reader, out io.Writer, bin string, exec ExecFunc) error {
	return session.Serve(ctx, in, out, func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		code, err := exec(ctx, append([]string{bin, "agent"}, args...), stdin, stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return -1
		}
		return code
	})
}
