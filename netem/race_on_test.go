//go:build race

package netem_test

// raceEnabled: the race detector slows the packet loop by an order of
// magnitude, so the namespace tests, which time real packets, skip.
const raceEnabled = true
