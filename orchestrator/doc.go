// Package orchestrator owns stack lifecycle, the shaping agents, verify,
// doctor and cleanup, and the RTT study's plan, runner and resume, over
// the engine package's Docker wrapper and images. The placement and worker
// studies build on it from their own packages; it imports neither.
package orchestrator
