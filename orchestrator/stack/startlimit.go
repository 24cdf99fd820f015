package stack

import (
	"time"
)

// ReadyLimit is how long a stack's database or app may take to become
// ready on the engine's own platform; every wait for a member to start
// or answer takes its limit through engine.Platform.Limit, longer where
// the platform runs under emulation, so that a stack of another platform
// is not given up while it boots.
const ReadyLimit = 3 * time.Minute
