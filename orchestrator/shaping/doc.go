// Package shaping is the control side of the shapers on a stack: one
// agent per shaped member (kernel netem or the userspace shaper, on the
// wire, ingress or egress), the links they hold (a delay per direction and
// peer, with the floor), calibration, snapshots of what each shaper did,
// the ICMP and SELECT 1 probes, the one-way captures of shape verify, the
// stack's verification of the route contract and the round-trip trace.
// The shapers themselves, which decide when a packet leaves, are in netem.
package shaping
