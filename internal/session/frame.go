// Package session is the protocol of `rttlab agent session`: one long-
// lived process in an agent container runs many short agent calls sent
// to it as JSON lines, instead of a docker exec each.
package session

// Frame is one line of the protocol, either way.
//
// To the session: Args starts a call (the agent command's arguments,
// without "agent"), EOF closes the call's standard input, Cancel ends
// its context. From the session: Out and Err carry the call's output as
// it writes it, Exit (with Done) its exit status once it ended.
type Frame struct {
	ID     uint64   `json:"id"`
	Args   []string `json:"args,omitempty"`
	EOF    bool     `json:"eof,omitempty"`
	Cancel bool     `json:"cancel,omitempty"`
	Out    []byte   `json:"o,omitempty"`
	Err    []byte   `json:"e,omitempty"`
	Done   bool     `json:"done,omitempty"`
	Exit   int      `json:"exit,omitempty"`
}

// Verbs are the agent commands a session runs; any other is refused
// (exit 2), so that what is timed (the load client) or needs an
// environment of its own (the SELECT 1 probe) keeps a process of its own.
var Verbs = []string{"ctl", "ping", "capture"}
