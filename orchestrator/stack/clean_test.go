package stack

import (
	"context"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
)

// clean --images removes what rttlab built, never a user's image that
// inherited rttlab's labels (FROM rttlab/go:latest).
func TestCleanImagesKeepsOwnImage(t *testing.T) {
	f := enginefake.New()
	f.AddImage(engine.ImageRef("go"), map[string]string{engine.LabelApp: "go"})
	own := f.AddImage("example/shop:1.4", map[string]string{engine.LabelApp: "go"})
	if _, err := CleanAll(context.Background(), f, true); err != nil {
		t.Fatal(err)
	}
	if id, err := f.ImageID(context.Background(), "example/shop:1.4"); err != nil || id != own {
		t.Errorf("the user's image was removed: %v", err)
	}
	if _, err := f.ImageID(context.Background(), engine.ImageRef("go")); err == nil {
		t.Error("rttlab's image was kept")
	}
	for tags, want := range map[string]bool{"rttlab/go:latest": true, "rttlab-ci-go:latest": true, "": true, "<none>:<none>": true,
		"example/shop:1.4": false, "example/cargo:latest": false, "rttlab/go:latest,example/shop:1": false} {
		var ts []string
		if tags != "" {
			ts = strings.Split(tags, ",")
		}
		if got := engine.BuiltByRttlab(ts, map[string]string{engine.LabelApp: "go"}); got != want {
			t.Errorf("%q: %v, want %v", tags, got, want)
		}
	}
}
