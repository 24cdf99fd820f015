package results

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/rttlab/rttlab/internal/capped"
)

// The kinds of results folder, one per study.
const (
	KindStudy     = "rtt"       // rttlab run: its manifest has no kind
	KindPlacement = "placement" // rttlab place
	KindWorkers   = "workers"   // rttlab workers
)

// FolderKind reads dir's manifest once and says which study wrote the
// folder: the manifest's kind for the placement and worker studies, and
// KindStudy for a manifest without one.
func FolderKind(dir string) (string, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := capped.ReadFile(path, "manifest", MaxManifest)
	if err != nil {
		return "", err
	}
	var m struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("%s: %w", JSONErrPos(path, b, err), JSONWords(err))
	}
	switch m.Kind {
	case "":
		return KindStudy, nil
	case KindPlacement, KindWorkers:
		return m.Kind, nil
	}
	return "", fmt.Errorf("%s: kind %q is not a study rttlab knows (placement, workers, or none for rttlab run)", path, m.Kind)
}
