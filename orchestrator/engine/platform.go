package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// This file is the one place of rttlab's code that names architectures:
// the platforms it builds and runs, and qemu's names for them.

// Platform is the OS and architecture an image is built for and a
// container runs. EngineArch is the engine's own architecture: an image of
// another one runs under emulation (qemu-user through binfmt_misc), its tag
// carries its architecture so that both sit side by side on one engine, and
// rttlab's own agents (shapers, probes, captures, load client) keep the
// engine's, since emulation cannot shape (qemu-user lacks the netlink
// families iptables and tc need).
//
// The zero Platform is the engine's own without asking it: tags and
// containers as before platforms existed.
type Platform struct {
	OS, Arch   string
	EngineArch string
}

// Platforms are the platforms rttlab builds and runs.
var Platforms = []string{"linux/amd64", "linux/arm64"}

// qemuNames maps Go's architecture names to qemu's and binfmt_misc's.
var qemuNames = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

// ErrPlatform is wrapped by every error about the platform asked.
var ErrPlatform = errors.New("platform")

// ParsePlatform reads --platform: "" (the engine's own), linux/amd64 or
// linux/arm64 (linux/arm64/v8 too).
func ParsePlatform(s string) (Platform, error) {
	if s == "" {
		return Platform{}, nil
	}
	norm := strings.ToLower(strings.TrimSpace(s))
	if n, ok := strings.CutSuffix(norm, "/v8"); ok && strings.HasSuffix(n, "/arm64") {
		norm = n // arm64's only variant
	}
	if !slices.Contains(Platforms, norm) {
		return Platform{}, fmt.Errorf("%w %q: rttlab builds and runs %s", ErrPlatform, s, strings.Join(Platforms, " and "))
	}
	goos, arch, _ := strings.Cut(norm, "/")
	return Platform{OS: goos, Arch: arch}, nil
}

// On settles p against the engine: the engine's own when p is zero, and
// the engine's architecture recorded. An engine of another OS cannot run
// it.
func (p Platform) On(info EngineInfo) (Platform, error) {
	if p.Arch == "" {
		p.OS, p.Arch = info.OS, info.Arch
	}
	p.EngineArch = info.Arch
	if info.OS != "" && info.OS != p.OS {
		return p, fmt.Errorf("%w %s: the engine runs %s/%s containers", ErrPlatform, p, info.OS, info.Arch)
	}
	return p, nil
}

// String is "linux/arm64", or "" for the zero Platform.
func (p Platform) String() string {
	if p.Arch == "" {
		return ""
	}
	return p.OS + "/" + p.Arch
}

// Foreign says whether p runs under emulation on its engine.
func (p Platform) Foreign() bool {
	return p.Arch != "" && p.EngineArch != "" && p.Arch != p.EngineArch
}

// emulatedSlowdown is how much longer a start or a build may take when
// the platform runs under emulation: PostgreSQL's initdb and a Rails boot
// took 4–5 × their native time under qemu-user here (Puma's workers
// booted in 94–99 s against about 20 s natively), rustc longer still.
const emulatedSlowdown = 5

// Limit is d, or emulatedSlowdown × d where p runs under emulation: the
// waits for a stack's members and the image builds take their limits
// from it, so that work of another platform is not given up while
// emulation slows it.
func (p Platform) Limit(d time.Duration) time.Duration {
	if p.Foreign() {
		return emulatedSlowdown * d
	}
	return d
}

// Native is the engine's own platform, the one rttlab's agents run.
func (p Platform) Native() Platform {
	if p.EngineArch == "" {
		return p
	}
	return Platform{OS: p.OS, Arch: p.EngineArch, EngineArch: p.EngineArch}
}

// ImageRef is the tag of an app's image for p: ImageRef(app) for the
// engine's own platform, <prefix><app>:latest-<arch> for a foreign one.
func (p Platform) ImageRef(app string) string {
	if !p.Foreign() {
		return ImageRef(app)
	}
	return ImagePrefix + app + ":latest-" + p.Arch
}

// BaseRef is the base image every Dockerfile starts from, on p: BaseImage
// for the engine's own platform; for a foreign one, rttlab's own tag of a
// Debian tree of that architecture, which builds for p start from instead.
func (p Platform) BaseRef() string {
	if !p.Foreign() {
		return BaseImage
	}
	return ImagePrefix + BaseImage + "-" + p.Arch
}

// oci is p for the Engine API, nil for the zero Platform.
func (p Platform) oci() *ocispec.Platform {
	if p.Arch == "" {
		return nil
	}
	return &ocispec.Platform{OS: p.OS, Architecture: p.Arch}
}

// BinfmtDir is where the kernel lists its binfmt_misc handlers.
var BinfmtDir = "/proc/sys/fs/binfmt_misc"

// CheckEmulation says whether this host can run p's binaries in
// containers: nothing to check for the engine's own platform; otherwise
// binfmt_misc must be mounted and hold an enabled qemu handler for p's
// architecture with the F flag (the interpreter opened at registration,
// so that it works inside a container's root). The error names the fix.
// It reads the host rttlab runs on, which is the engine's host for every
// stack rttlab shapes.
func CheckEmulation(p Platform) error {
	if !p.Foreign() {
		return nil
	}
	q := qemuNames[p.Arch]
	fix := fmt.Sprintf("install qemu-user-static and register its handler (apt-get install qemu-user-static; mount -t binfmt_misc binfmt_misc %s; cat /usr/lib/binfmt.d/qemu-%s.conf > %s/register, or systemctl restart systemd-binfmt)", BinfmtDir, q, BinfmtDir)
	if _, err := os.Stat(filepath.Join(BinfmtDir, "status")); err != nil {
		return fmt.Errorf("%w %s runs under emulation on this %s/%s engine, but binfmt_misc is not mounted: %s", ErrPlatform, p, p.OS, p.EngineArch, fix)
	}
	b, err := os.ReadFile(filepath.Join(BinfmtDir, "qemu-"+q))
	if err != nil {
		return fmt.Errorf("%w %s runs under emulation on this %s/%s engine, but binfmt_misc has no qemu-%s handler: %s", ErrPlatform, p, p.OS, p.EngineArch, q, fix)
	}
	s := string(b)
	if !strings.HasPrefix(s, "enabled") {
		return fmt.Errorf("%w %s: the qemu-%s handler of binfmt_misc is disabled: echo 1 > %s", ErrPlatform, p, q, filepath.Join(BinfmtDir, "qemu-"+q))
	}
	for _, l := range strings.Split(s, "\n") {
		if f, ok := strings.CutPrefix(l, "flags: "); ok && !strings.Contains(f, "F") {
			return fmt.Errorf("%w %s: the qemu-%s handler of binfmt_misc lacks the F flag, so containers cannot find its interpreter: %s", ErrPlatform, p, q, fix)
		}
	}
	return nil
}
