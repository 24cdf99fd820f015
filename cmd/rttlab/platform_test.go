package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
)

// anEngine answers EngineInfo as an amd64 Linux engine.
type anEngine struct{}

func (anEngine) EngineInfo(context.Context) (engine.EngineInfo, error) {
	return engine.EngineInfo{OS: "linux", Arch: "amd64"}, nil
}

// withBinfmt points the emulation check at a binfmt_misc folder that has
// a registered qemu-aarch64 handler when registered is set.
func withBinfmt(t *testing.T, registered bool) {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "status"), []byte("enabled\n"), 0o644)
	if registered {
		os.WriteFile(filepath.Join(dir, "qemu-aarch64"), []byte("enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: POF\n"), 0o644)
	}
	old := engine.BinfmtDir
	engine.BinfmtDir = dir
	t.Cleanup(func() { engine.BinfmtDir = old })
}

// settle gives the engine's own platform when none is asked, a foreign
// one where the host emulates it, and refuses it (a usage error naming
// the fix) where it does not: before any image is built, since connectFor
// and buildForRun settle first.
func TestPlatformSettle(t *testing.T) {
	ctx := context.Background()
	withBinfmt(t, false)
	var pf platformFlag
	p, err := pf.settle(ctx, anEngine{})
	if err != nil || p.String() != "linux/amd64" || p.Foreign() {
		t.Fatalf("default = %+v, %v", p, err)
	}
	pf = platformFlag{raw: "linux/arm64"}
	_, err = pf.settle(ctx, anEngine{})
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "platform linux/arm64 runs under emulation on this linux/amd64 engine, but binfmt_misc has no qemu-aarch64 handler: install qemu-user-static") {
		t.Errorf("without emulation: %v, want a usage error naming the fix", err)
	}
	withBinfmt(t, true)
	if p, err = pf.settle(ctx, anEngine{}); err != nil || !p.Foreign() || pf.p != p {
		t.Errorf("with emulation: %+v, %v", p, err)
	}
}

// A resumed folder keeps its platform; --platform naming another is
// refused in one line, and naming the same is accepted. A folder from
// before platforms were recorded ran on the engine's own.
func TestPlatformOfAResumedFolder(t *testing.T) {
	ctx := context.Background()
	withBinfmt(t, true)
	cases := []struct {
		folder   string
		emulated bool
		flag     string
		want     string
		err      string
	}{
		{"linux/arm64", true, "", "linux/arm64", ""},
		{"linux/arm64", true, "linux/arm64", "linux/arm64", ""},
		{"linux/arm64", true, "linux/amd64", "", "--resume d: the folder ran on linux/arm64: leave out --platform linux/amd64"},
		{"", false, "linux/amd64", "linux/amd64", ""},
		{"", false, "linux/arm64", "", "--resume d: the folder ran on linux/amd64: leave out --platform linux/arm64"},
		{"linux/amd64", false, "", "linux/amd64", ""},
		// A DGX's native arm64 folder is not continued under emulation,
		// nor an emulated amd64 one natively.
		{"linux/arm64", false, "", "", "--resume d: the folder ran linux/arm64 natively, and this linux/amd64 engine would run it under emulation"},
		{"linux/amd64", true, "", "", "--resume d: the folder ran linux/amd64 under emulation, and this linux/amd64 engine would run it natively"},
	}
	for _, c := range cases {
		pf := platformFlag{raw: c.flag}
		pf.resumes("d", c.folder, c.emulated)
		p, err := pf.settle(ctx, anEngine{})
		if c.err != "" {
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("folder %q, --platform %q: %v, want one line with %q", c.folder, c.flag, err, c.err)
			}
			continue
		}
		if err != nil || p.String() != c.want {
			t.Errorf("folder %q, --platform %q: %q, %v; want %s", c.folder, c.flag, p, err, c.want)
		}
	}
}
