package agentclient

import (
	"context"
	"io"
	"time"
)

// sessionFor bounds a session: it lives as long as the run that uses it.
const sessionFor = 7 * 24 * time.Hour

// Session runs the long-lived `agent session` in the client's container:
// the frames of its calls go on stdin and come back on stdout (package
// internal/session), its own messages on stderr. It returns when the
// session ends (its input closed, or ctx done); only a failed exec is an
// error, its exit status none.
func (c Client) Session(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	_, err := c.Exec(ctx, Call{Verb: "session", Stdin: stdin, Stdout: stdout, Stderr: stderr, Timeout: sessionFor, AnyExit: true})
	return err
}
