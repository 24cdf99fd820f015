package workers

import (
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
)

// Under emulation Puma's workers get as long to boot as rttlab waits for
// them; on the engine's own platform Puma keeps its own limit.
func TestPumaWorkerBoot(t *testing.T) {
	if got := pumaWorkerBoot(engine.Platform{}); got != "" {
		t.Errorf("zero platform: %q, want none", got)
	}
	if got := pumaWorkerBoot(engine.Platform{OS: "linux", Arch: "a", EngineArch: "a"}); got != "" {
		t.Errorf("native: %q, want none", got)
	}
	if got := pumaWorkerBoot(engine.Platform{OS: "linux", Arch: "b", EngineArch: "a"}); got != "300" {
		t.Errorf("emulated: %q, want 300", got)
	}
}
