package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/rtt/raw"
)

// rehearsalPlan is the arm64 rehearsal's tiny RTT plan: go /feed at 0 and
// 1 ms, 2 runs of 10 requests.
const rehearsalPlan = `name: rehearsal-arm64
seed: 5
platform: linux/arm64
delays_ms: [0, 1]
runs: 2
requests: 10
` + drillProbes + `apps:
  - name: go
    routes: [/feed]
`

// The host users name, rehearsed: the database and the go app built for
// linux/arm64 (under qemu emulation on an amd64 host, natively on a DGX),
// their stack shaped by agents of the engine's own platform, and a tiny
// RTT plan run to the end. The folder's manifest says arm64, the images
// are labelled arm64, nothing of the run is left, and the digest says
// that emulated timings make no claim.
func TestIntegrationArm64Rehearsal(t *testing.T) {
	bin, root := drillBinary(t)
	ctx := context.Background()
	rt := drillEngine(t)
	info, err := rt.EngineInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := labelled(t, rt)
	dir := t.TempDir()
	plan := writeFile(t, dir, "rehearsal.yaml", rehearsalPlan)
	start := time.Now()
	code, out, errs := runBinary(t, bin, root, "run", "--plan", plan, "--out", dir)
	t.Logf("rehearsal: %s wall (images included)\nstdout:\n%s\nstderr:\n%s", time.Since(start).Round(time.Second), out, errs)
	if code != 0 {
		t.Fatalf("rttlab run --plan rehearsal: exit %d", code)
	}
	folders, _ := filepath.Glob(filepath.Join(dir, "*-rehearsal-arm64"))
	if len(folders) != 1 {
		t.Fatalf("results folders %v", folders)
	}
	var m raw.Manifest
	b, err := os.ReadFile(filepath.Join(folders[0], "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	foreign := info.Arch != "arm64"
	if m.Platform != "linux/arm64" || m.Emulated != foreign {
		t.Errorf("manifest platform %q emulated %v (engine %s)", m.Platform, m.Emulated, info.Arch)
	}
	arm, _ := engine.ParsePlatform("linux/arm64")
	arm, _ = arm.On(info)
	for _, app := range []string{"postgres", "go"} {
		p, err := rt.ImagePlatform(ctx, arm.ImageRef(app))
		if err != nil || p != "linux/arm64" {
			t.Errorf("image %s: %q, %v", arm.ImageRef(app), p, err)
		}
	}
	if p, err := rt.ImagePlatform(ctx, engine.ImageRef("agent")); err != nil || p != info.OS+"/"+info.Arch {
		t.Errorf("the agent's image is %q (%v), want the engine's own", p, err)
	}
	if foreign && !strings.Contains(out, "platform linux/arm64 under emulation (qemu-user): timings make no claim") {
		t.Error("the digest does not say that emulated timings make no claim")
	}
	if left := labelledSince(t, rt, before); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
