// Package rtt is the RTT study: its plan (apps x routes x delays x runs,
// with the seed of every draw), the shuffled and resumable tasks, the
// runner that drives each app's stack through them, the estimate and the
// budgets gate's plan checks. Its results folder's raw files (their
// format, reader and writer) are rtt/raw; their analysis and rendering
// are rtt/report. It stands on the shared lab (orchestrator):
// engine (the Docker Engine API, images, doctor), stack (the containers
// of a run) and shaping (the agents and links on a stack), which the
// placement and worker studies use too; it imports neither study.
package rtt
