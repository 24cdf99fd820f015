package shaping

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// The integration tests' ping helper reads the agent's output: lost
// echoes come from the JSON result, and a failed probe is an error rather
// than "every echo lost".
func TestParsePing(t *testing.T) {
	allLost := `{"dst":"10.0.0.2","sent":5,"received":0,"lost":5,"median_ns":0,"mean_ns":0,"min_ns":0,"max_ns":0,"samples_ns":null}` + "\n"
	some := `{"dst":"10.0.0.2","sent":5,"received":3,"lost":2,"median_ns":600000,"mean_ns":610000,"min_ns":550000,"max_ns":700000,"samples_ns":[550000,600000,700000]}` + "\n"
	res, err := parsePing(0, []byte(some), nil)
	if err != nil || res.Sent != 5 || res.Received != 3 || res.Lost != 2 || res.Median != 600*time.Microsecond {
		t.Errorf("some lost: %+v %v", res, err)
	}
	if res, err := parsePing(0, []byte(allLost), nil); err != nil || res.Lost != 5 || res.Received != 0 {
		t.Errorf("all lost: %+v %v", res, err)
	}
	denied := "rttlab: ping 10.0.0.2: open raw ICMP socket (needs CAP_NET_RAW): socket: operation not permitted\n"
	if _, err := parsePing(1, nil, []byte(denied)); err == nil || !strings.Contains(err.Error(), "CAP_NET_RAW") {
		t.Errorf("failed probe: %v, want an error with the agent's words", err)
	}
	for _, bad := range []string{"", "PING 10.0.0.2 56(84) bytes of data.\n", `{"sent":5,"received":4,"lost":0}`} {
		if _, err := parsePing(0, []byte(bad), nil); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The checks and the agents' start end as soon as the context does,
// even while a request to the app or an agent hangs.
func TestProbesHonourContext(t *testing.T) {
	srv := fakelab.HangingServer(t)
	d := &fakelab.Stub{Running: true}
	fakelab.EndsWithContext(t, "checkJSON", func(ctx context.Context) error {
		c := checkJSON(ctx, &http.Client{Timeout: 30 * time.Second}, srv.URL, "/feed", 200, nil)
		if c.OK {
			return nil
		}
		return ctx.Err()
	})
	// An agent that never answers: StartAgents polls until its context ends.
	shaped := &stack.Stack{RunID: "r1", NetworkID: "n1", Members: []*stack.Member{{Role: "app", Shaped: true, ID: "app1", Name: "rttlab-x-app", IP: "172.30.0.3"}}}
	fakelab.EndsWithContext(t, "StartAgents", func(ctx context.Context) error {
		_, err := StartAgents(ctx, engine.NewLab(d, ""), shaped, "userspace", "path", "")
		return err
	})
}
