package planfile

import "github.com/rttlab/rttlab/internal/capped"

// MaxBytes is the largest plan file read: the largest built-in plan
// written out is under 4 KiB, a plan with a hundred own apps and their
// request mixes under 100 KiB.
const MaxBytes = 1 << 20

// Read returns the contents of the plan file at path, refusing anything
// that is not a regular file or is larger than MaxBytes before reading
// more than MaxBytes of it. A missing file's error wraps os.ErrNotExist.
func Read(path string) ([]byte, error) {
	return capped.ReadFile(path, "plan", MaxBytes)
}
