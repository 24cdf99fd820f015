package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
)

// The platforms rttlab supports are read in their usual spellings; any
// other is refused naming the supported ones.
func TestParsePlatform(t *testing.T) {
	for in, want := range map[string]string{"": "", "linux/arm64": "linux/arm64", "LINUX/ARM64": "linux/arm64", "linux/arm64/v8": "linux/arm64", "linux/amd64": "linux/amd64"} {
		p, err := engine.ParsePlatform(in)
		if err != nil || p.String() != want {
			t.Errorf("ParsePlatform(%q) = %q, %v; want %q", in, p, err, want)
		}
	}
	for _, in := range []string{"linux/s390x", "linux/arm", "arm64", "linux/amd46", "windows/amd64"} {
		_, err := engine.ParsePlatform(in)
		if err == nil || !strings.Contains(err.Error(), "rttlab builds and runs linux/amd64 and linux/arm64") || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParsePlatform(%q) = %v, want one line naming the platforms", in, err)
		}
	}
}

// On an amd64 engine, the zero platform is the engine's own with today's
// tags; arm64 is foreign: its images are tagged with the architecture,
// built from its own base, and the agents keep the engine's platform.
func TestPlatformOnEngine(t *testing.T) {
	info := engine.EngineInfo{OS: "linux", Arch: "amd64"}
	own, err := engine.Platform{}.On(info)
	if err != nil || own.String() != "linux/amd64" || own.Foreign() {
		t.Fatalf("zero on amd64 = %+v, %v", own, err)
	}
	if own.ImageRef("go") != engine.ImageRef("go") || own.BaseRef() != engine.BaseImage {
		t.Errorf("the engine's own platform changed the tags: %s %s", own.ImageRef("go"), own.BaseRef())
	}
	arm, _ := engine.ParsePlatform("linux/arm64")
	arm, err = arm.On(info)
	if err != nil || !arm.Foreign() {
		t.Fatalf("arm64 on amd64 = %+v, %v", arm, err)
	}
	if got := arm.ImageRef("go"); got != engine.ImagePrefix+"go:latest-arm64" {
		t.Errorf("arm64 tag %s", got)
	}
	if got := arm.BaseRef(); got != engine.ImagePrefix+"debian:trixie-slim-arm64" {
		t.Errorf("arm64 base %s", got)
	}
	if n := arm.Native(); n.String() != "linux/amd64" || n.Foreign() {
		t.Errorf("native of arm64 on amd64 = %+v", n)
	}
	if !engine.BuiltByRttlab([]string{arm.ImageRef("go")}, map[string]string{engine.LabelApp: "go"}) {
		t.Error("clean --images would not remove an arm64 image rttlab built")
	}
	if _, err := arm.On(engine.EngineInfo{OS: "windows", Arch: "amd64"}); err == nil {
		t.Error("a linux platform settled on a windows engine")
	}
}

// binfmt writes a binfmt_misc folder with the given qemu handler.
func binfmt(t *testing.T, name, content string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte("enabled\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if name != "" {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := engine.BinfmtDir
	engine.BinfmtDir = dir
	t.Cleanup(func() { engine.BinfmtDir = old })
}

// A foreign platform needs an enabled qemu handler with the F flag; each
// missing piece gets one line naming the fix. The engine's own needs
// nothing.
func TestCheckEmulation(t *testing.T) {
	arm, _ := engine.ParsePlatform("linux/arm64")
	arm, _ = arm.On(engine.EngineInfo{OS: "linux", Arch: "amd64"})
	own := arm.Native()
	ok := "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: POF\noffset 0\n"
	cases := []struct {
		name, file, content, want string
	}{
		{"registered", "qemu-aarch64", ok, ""},
		{"no handler", "", "", "no qemu-aarch64 handler: install qemu-user-static"},
		{"disabled", "qemu-aarch64", strings.Replace(ok, "enabled", "disabled", 1), "is disabled: echo 1 >"},
		{"no F flag", "qemu-aarch64", strings.Replace(ok, "POF", "PO", 1), "lacks the F flag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			binfmt(t, c.file, c.content)
			if err := engine.CheckEmulation(own); err != nil {
				t.Errorf("the engine's own platform: %v", err)
			}
			err := engine.CheckEmulation(arm)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("CheckEmulation = %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n")):
				t.Errorf("CheckEmulation = %v, want one line with %q", err, c.want)
			}
		})
	}
	t.Run("not mounted", func(t *testing.T) {
		old := engine.BinfmtDir
		engine.BinfmtDir = filepath.Join(t.TempDir(), "absent")
		defer func() { engine.BinfmtDir = old }()
		if err := engine.CheckEmulation(arm); err == nil || !strings.Contains(err.Error(), "binfmt_misc is not mounted: install qemu-user-static and register its handler") {
			t.Errorf("CheckEmulation = %v", err)
		}
	})
}

// A foreign base is debootstrapped for its architecture and built FROM
// scratch with the platform set (an import would be labelled the
// engine's own), under its own tag; the engine's own base is imported as
// before.
func TestEnsureBaseForeign(t *testing.T) {
	fakeDebootstrap(t)
	f := enginefake.New()
	arm, _ := engine.ParsePlatform("linux/arm64")
	arm, _ = arm.On(engine.EngineInfo{OS: "linux", Arch: "amd64"})
	path, _, err := engine.EnsureBase(context.Background(), f, engine.BaseOptions{SkipPull: true, Platform: arm})
	if err != nil || path != engine.BaseDebootstrapd {
		t.Fatalf("EnsureBase = %q, %v", path, err)
	}
	ref := arm.BaseRef()
	if want := []string{"ImageID " + ref, "BuildImage " + ref, "ImageID " + ref}; !slices.Equal(f.Calls(), want) {
		t.Errorf("calls %q, want %q", f.Calls(), want)
	}
	b := f.Builds[0]
	if b.Opts.Platform.String() != "linux/arm64" || !slices.Equal(b.Files, []string{"Dockerfile", "rootfs.tar"}) {
		t.Errorf("base build %+v", b)
	}
	if img := f.Image(ref); img == nil || img.Platform != "linux/arm64" {
		t.Errorf("base image %+v", img)
	}
}

// The base's tree is debootstrapped for the platform's architecture.
func TestEnsureBaseDebootstrapsTheArchitecture(t *testing.T) {
	fakeDebootstrap(t)
	f := &importing{Engine: enginefake.New()}
	own, _ := engine.Platform{}.On(engine.EngineInfo{OS: "linux", Arch: "amd64"})
	if _, _, err := engine.EnsureBase(context.Background(), f, engine.BaseOptions{SkipPull: true, Platform: own}); err != nil {
		t.Fatal(err)
	}
	if got := tarFiles(t, f.tarball)["etc/debootstrap-arch"]; got != "amd64\n" {
		t.Errorf("debootstrap --arch %q", got)
	}
	if !bytes.Contains(f.tarball, []byte("debootstrap-args")) {
		t.Error("the tree is not in the import")
	}
}
