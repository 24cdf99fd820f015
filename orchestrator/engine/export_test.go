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

// CapNetAdmin is the capability bit doctor looks for, and ParentDir the
// folder doctor measures free space in, for the tests outside the package.
const CapNetAdmin = capNetAdmin

var ParentDir = parentDir
