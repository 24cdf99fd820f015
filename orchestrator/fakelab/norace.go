//go:build !race

package fakelab

// UnderRace tells whether the tests run under the race detector (see
// race.go).
const UnderRace = false
