package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/internal/session"
)

// A session runs agent commands in its process, each from a fresh
// command tree, with the exit statuses and words of the binary: bad input
// is 2 and said; a verb that needs a process of its own is refused.
func TestSessionRunsAgentCommands(t *testing.T) {
	in := strings.Join([]string{
		`{"id":1,"args":["ctl","none"]}`, `{"id":1,"eof":true}`,
		`{"id":2,"args":["ping","--count","0","--to","127.0.0.1"]}`, `{"id":2,"eof":true}`,
		`{"id":3,"args":["load","--url","http://x"]}`,
		`{"id":4,"args":["capture","--for","1s"]}`,
		`{"id":5,"args":["ping","--count","x","--to","127.0.0.1"]}`, `{"id":5,"eof":true}`,
		`{"id":6,"args":["ctl","show","--nope"]}`, `{"id":6,"eof":true}`,
		`{"id":7,"args":["ctl"]}`, `{"id":7,"eof":true}`,
		`{"id":8,"args":["ctl","show","extra"]}`, `{"id":8,"eof":true}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := session.Serve(context.Background(), strings.NewReader(in), &out, RunInProcess(NewCmd)); err != nil {
		t.Fatal(err)
	}
	exit, stderr := map[uint64]int{}, map[uint64]string{}
	dec := json.NewDecoder(&out)
	for {
		var f session.Frame
		if err := dec.Decode(&f); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		stderr[f.ID] += string(f.Err)
		if f.Done {
			exit[f.ID] = f.Exit
		}
	}
	// A bad flag value, an unknown flag and a wrong number of arguments
	// are bad input as on the command line.
	for id, want := range map[uint64]string{1: `ctl "none"`, 2: "--count 0", 3: "does not run in a session", 4: "--peer",
		5: `--count "x" is not a whole number`, 6: "unknown flag: --nope", 7: "usage: agent ctl", 8: "usage: agent ctl"} {
		if exit[id] != 2 || !strings.Contains(stderr[id], want) {
			t.Errorf("call %d: exit %d, stderr %q; want 2 and %q", id, exit[id], stderr[id], want)
		}
	}
}
