// Package orchestrator is the RTT study: its plan (apps x routes x
// delays x runs, with the seed of every draw), the shuffled and resumable
// tasks, the runner that drives each app's stack through them, the
// estimate and the budgets gate's plan checks. It stands on three
// layers of its own: engine (the Docker Engine API, images, doctor), stack (the
// containers of a run) and shaping (the agents and links on a stack). The
// placement and worker studies use the same layers from their own
// packages; this package imports neither study.
package rtt
