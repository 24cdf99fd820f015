package stack

import (
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
)

// The waits for a stack's members take their limits through
// Platform.Limit: five times as long under emulation.
func TestStartLimit(t *testing.T) {
	native := engine.Platform{OS: "linux", Arch: "a", EngineArch: "a"}
	foreign := engine.Platform{OS: "linux", Arch: "b", EngineArch: "a"}
	for _, c := range []struct {
		p    engine.Platform
		d    time.Duration
		want time.Duration
	}{
		{engine.Platform{}, ReadyLimit, ReadyLimit},
		{native, ReadyLimit, ReadyLimit},
		{native, time.Minute, time.Minute},
		{foreign, ReadyLimit, 15 * time.Minute},
		{foreign, 2 * time.Minute, 10 * time.Minute},
	} {
		if got := c.p.Limit(c.d); got != c.want {
			t.Errorf("%+v.Limit(%v) = %v, want %v", c.p, c.d, got, c.want)
		}
	}
}
