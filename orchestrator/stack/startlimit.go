package stack

import (
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
)

// ReadyLimit is how long a stack's database or app may take to become
// ready on the engine's own platform.
const ReadyLimit = 3 * time.Minute

// emulatedSlowdown is how much longer a start may take when the
// platform runs under emulation: PostgreSQL's initdb and a Rails boot
// took 4–5 × their native time under qemu-user here (Puma's workers
// booted in 94–99 s against about 20 s natively).
const emulatedSlowdown = 5

// StartLimit is d, or emulatedSlowdown × d where p runs under emulation:
// every wait for a member to start or answer takes its limit from it, so
// that a stack of another platform is not given up while it boots.
func StartLimit(p engine.Platform, d time.Duration) time.Duration {
	if p.Foreign() {
		return emulatedSlowdown * d
	}
	return d
}
