package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
)

// danglingRttlab returns the untagged images carrying rttlab's app label.
func danglingRttlab(t *testing.T, rt *engine.Runtime) []string {
	t.Helper()
	ids, err := rt.DanglingImages(context.Background(), map[string]string{engine.LabelApp: ""})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// The images make run builds leave no untagged image behind: every
// image, axum's build stage included (tagged, so the next build's cache
// stays), and a rebuild of the agent by another rttlab binary (its
// context changes) removes the image it replaced; so does going back.
func TestIntegrationImagesLeaveNothingUntagged(t *testing.T) {
	bin, root := drillBinary(t)
	ctx := context.Background()
	rt := drillEngine(t)
	before := danglingRttlab(t, rt)
	if code, out, errs := runBinary(t, bin, root, "images", "build"); code != 0 {
		t.Fatalf("images build: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := rt.ImageID(ctx, engine.StageRef(engine.ImageRef("axum"), "build")); err != nil {
		t.Errorf("axum's build stage is not tagged: %v", err)
	}
	other := filepath.Join(t.TempDir(), "rttlab-other")
	ld := "-X main.version=other-" + time.Now().Format("150405.000000")
	if out, err := exec.Command("go", "build", "-ldflags", ld, "-o", other, ".").CombinedOutput(); err != nil {
		t.Fatalf("build another rttlab: %v\n%s", err, out)
	}
	for _, b := range []string{other, bin} {
		if code, out, errs := runBinary(t, b, root, "images", "build", "agent"); code != 0 {
			t.Fatalf("images build agent (%s): exit %d\n%s\n%s", b, code, out, errs)
		}
	}
	var left []string
	for _, id := range danglingRttlab(t, rt) {
		if !slices.Contains(before, id) {
			left = append(left, id)
		}
	}
	if len(left) > 0 {
		t.Errorf("untagged images left behind: %v", left)
	}
}
