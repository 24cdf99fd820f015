package planfile

import (
	"errors"
	"fmt"
	"os"

	"github.com/rttlab/rttlab/internal/capped"
)

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

// Load returns the built-in plan named nameOrFile (builtin), or else the
// plan that parse makes of the file of that name. A name that is neither
// is refused naming the built-ins: builtins is what the refusal calls them,
// e.g. "plan (study, smoke)".
func Load[P any](nameOrFile, builtins string, builtin func(string) (P, bool), parse func(file string, data []byte) (P, error)) (P, error) {
	if p, ok := builtin(nameOrFile); ok {
		return p, nil
	}
	data, err := Read(nameOrFile)
	if err != nil {
		var none P
		if errors.Is(err, os.ErrNotExist) {
			return none, fmt.Errorf("plan %q is neither a built-in %s nor a file", nameOrFile, builtins)
		}
		return none, err
	}
	return parse(nameOrFile, data)
}
