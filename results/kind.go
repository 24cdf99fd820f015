package results

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/rttlab/rttlab/internal/capped"
)

// The kinds of results folder, one per study, declared here once: the
// manifest's vocabulary. Each study registers its own (Register).
const (
	KindRTT       = "rtt"       // rttlab run: the RTT study
	KindPlacement = "placement" // rttlab place
	KindWorkers   = "workers"   // rttlab workers
)

// Kinds lists every study's kind, in the order the refusals name them.
var Kinds = []string{KindRTT, KindPlacement, KindWorkers}

// Writer names the command that writes a kind of results folder, as its
// study registered it.
func Writer(kind string) string {
	if k, ok := Lookup(kind); ok {
		return k.Writer
	}
	return "an unknown study"
}

// Format is the version of the results folders this rttlab writes, in
// every manifest's "format"; a manifest without one is format 1. A folder
// of a newer format is read by nothing here: its report, compare and
// resume are refused.
const Format = 1

// Header is what every study's manifest carries at its top: the kind of
// study (none in an RTT study's manifests of before, which reads as
// KindRTT) and the folder's format.
type Header struct {
	Kind   string `json:"kind,omitempty"`
	Format int    `json:"format,omitempty"`
}

// ReadHeader reads dir's manifest once for its kind and format.
func ReadHeader(dir string) (Header, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := capped.ReadFile(path, "manifest", MaxManifest)
	if err != nil {
		return Header{}, err
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return Header{}, fmt.Errorf("%s: %w", JSONErrPos(path, b, err), JSONWords(err))
	}
	if h.Kind == "" {
		h.Kind = KindRTT
	}
	if h.Format == 0 {
		h.Format = 1
	}
	if _, ok := Lookup(h.Kind); !ok {
		return Header{}, fmt.Errorf("%s: kind %q is not a study rttlab knows (%s)", path, h.Kind, knownKinds())
	}
	if h.Format > Format {
		return h, fmt.Errorf("%s was written by a newer rttlab (results format %d; this one reads up to %d): use that rttlab, or install the newer release", dir, h.Format, Format)
	}
	return h, nil
}

// FolderKind reads dir's manifest once and says which study wrote the
// folder; a folder of a newer format is an error.
func FolderKind(dir string) (string, error) {
	h, err := ReadHeader(dir)
	return h.Kind, err
}

// CheckResume is the check before a resume of dir by the study of kind:
// a folder another study wrote, or a newer rttlab, is refused with one
// line that names what continues it. A folder whose manifest cannot be
// read passes: the study's own reader says why it is not one of its
// folders.
func CheckResume(dir, kind string) error {
	h, err := ReadHeader(dir)
	if err != nil {
		if h.Format > Format {
			return err
		}
		return nil
	}
	if h.Kind != kind {
		return fmt.Errorf("--resume %s: the folder holds a %s study, written by %s; %s --resume continues only its own: use %s --resume %s", dir, h.Kind, Writer(h.Kind), Writer(kind), Writer(h.Kind), dir)
	}
	return nil
}
