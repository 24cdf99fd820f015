package engine

import (
	"testing"
	"time"
)

// SetProgressEvery makes long steps (debootstrap, BuildEach) report every
// d for the rest of the test, for the tests outside the package.
func SetProgressEvery(t testing.TB, d time.Duration) {
	old := progressEvery
	progressEvery = d
	t.Cleanup(func() { progressEvery = old })
}
