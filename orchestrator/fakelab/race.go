//go:build race

package fakelab

// UnderRace tells whether the tests run under the race detector. A fake
// run's tests leave out the drawing of its figures there: drawing runs
// on one goroutine once the run's own have ended, so the detector has
// nothing to watch in it, and it makes a fake run about ten times slower.
// The same tests draw every figure when run without the detector, and
// a test that compares or checks the figures draws them always.
const UnderRace = true
