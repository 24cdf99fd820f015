// Package stack runs the containers of one run on the engine: the nodes
// of a stack (PostgreSQL and an app of this tree, an own image, or an own
// compose file's services) on a private network, their readiness, the
// database's statement counts, the labels that name the run and its
// owner, the helper agent containers, and the removal of everything a run
// left, the wire shapers' host rules included. It knows nothing of delays
// (package shaping) or of any study.
package stack
