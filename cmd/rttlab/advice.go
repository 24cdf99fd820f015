package main

import (
	"errors"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/shaping"
)

// advice says what a user of this command line can do about err, or ""
// when there is nothing to add. The library's errors say what happened;
// what to run about it is the command line's business, and lives here.
func advice(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, engine.ErrEngineDenied):
		return "run as root (sudo rttlab ...), or as a user the Docker socket admits"
	case errors.Is(err, engine.ErrNoEngine):
		return "start dockerd (in a checkout, `make run` installs and starts it), or point DOCKER_HOST at a running engine"
	case errors.Is(err, engine.ErrImageMissing):
		return "build the images first: rttlab images build"
	case errors.Is(err, engine.ErrNoDebootstrap):
		return "install debootstrap (apt-get install -y debootstrap), or make the image elsewhere and load it"
	case errors.Is(err, engine.ErrNeedRoot):
		return "run as root: sudo rttlab images base"
	case errors.Is(err, shaping.ErrAgentStopped):
		return "restart the stack: rttlab down, then rttlab up APP"
	}
	return ""
}

// adviseEngine replaces the fix of doctor's failed engine check with this
// command line's advice for the connection error.
func adviseEngine(checks []engine.DoctorCheck, connErr error) {
	a := advice(connErr)
	if a == "" {
		return
	}
	for i := range checks {
		if checks[i].Name == "docker engine" && !checks[i].OK {
			checks[i].Fix = a
		}
	}
}
