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
	// An engine that cannot answer is a failure, not bad input; a
	// misspelt platform and a folder's unknown platform are bad input.
	noEngine := errors.New("engine gone")
	if _, err := (&platformFlag{}).settle(ctx, failingEngine{noEngine}); !errors.Is(err, noEngine) || errors.As(err, &ue) {
		t.Errorf("engine gone: %v", err)
	}
	for _, c := range []struct {
		pf   platformFlag
		e    engine.Engine
		want string
	}{
		{platformFlag{raw: "linux/arm46"}, anEngine{}, `--platform "linux/arm46": rttlab builds and runs`},
		{platformFlag{resume: "d", folder: "linux/sparc"}, anEngine{}, "--resume d: "},
	} {
		if _, err := c.pf.settle(ctx, c.e); !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a usage error with %q", c.pf, err, c.want)
		}
	}
}

// failingEngine cannot say what it is.
type failingEngine struct{ err error }

func (e failingEngine) EngineInfo(context.Context) (engine.EngineInfo, error) {
	return engine.EngineInfo{}, e.err
}
