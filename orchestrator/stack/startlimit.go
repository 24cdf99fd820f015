package stack

import (
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
)

// ReadyLimit is how long a stack's database or app may take to become
// ready on the engine's own platform.
const ReadyLimit = 3 * time.Minute

// StartLimit is d, or longer where p runs under emulation
// (engine.Platform.Limit): every wait for a member to start or answer
// takes its limit from it, so that a stack of another platform is not
// given up while it boots.
func StartLimit(p engine.Platform, d time.Duration) time.Duration { return p.Limit(d) }
