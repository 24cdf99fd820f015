package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/version"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"

	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	labrt "github.com/rttlab/rttlab/orchestrator/runtime"

	"github.com/docker/docker/api/types/build"
	"golang.org/x/mod/modfile"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/syncbuf"
)

// BaseImage is the image every Dockerfile starts from.
const BaseImage = "debian:trixie-slim"

// ImagePrefix names the images rttlab builds: rttlab/<app>:latest, or
// $RTTLAB_IMAGE_PREFIX<app>:latest so that two checkouts (or two versions
// of rttlab) can keep their images apart on one engine.
var ImagePrefix = imagePrefix()

func imagePrefix() string {
	if p := os.Getenv("RTTLAB_IMAGE_PREFIX"); p != "" {
		return p
	}
	return "rttlab/"
}

// ImageRef returns the tag of an app's image.
func ImageRef(app string) string { return ImagePrefix + app + ":latest" }

// BuildOptions configure one image build.
type BuildOptions struct {
	Tag       string
	Labels    map[string]string
	BuildArgs map[string]string
	NoCache   bool
	Log       io.Writer // build output; nil discards
	// Platform the image is built for; zero: the engine's own, unnamed.
	Platform Platform
	// Target builds only the stage of that name (a multi-stage build's
	// earlier stage, tagged so that it is not left untagged).
	Target string
}

// BuildResult describes a built image.
type BuildResult struct {
	ID       string
	Duration time.Duration
}

// buildLimit is how long one image build may take: longer for a
// platform under emulation (an emulated Rust build outgrows the native
// limit).
func buildLimit(o BuildOptions) time.Duration { return o.Platform.Limit(longCall) }

// BuildImage builds an image from a tar build context with the classic
// builder, which every engine version we target supports.
func (r *Runtime) BuildImage(ctx context.Context, tarCtx io.Reader, o BuildOptions) (BuildResult, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, buildLimit(o))
	defer cancel()
	args := map[string]*string{}
	for k, v := range o.BuildArgs {
		v := v
		args[k] = &v
	}
	resp, err := r.cli.ImageBuild(ctx, tarCtx, build.ImageBuildOptions{
		Tags:        []string{o.Tag},
		Labels:      o.Labels,
		BuildArgs:   args,
		NoCache:     o.NoCache,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
		Platform:    o.Platform.String(),
		Target:      o.Target,
	})
	if err != nil {
		return BuildResult{}, fmt.Errorf("build %s: %w", o.Tag, err)
	}
	defer resp.Body.Close()
	steps := &stepImages{}
	log := io.Writer(steps)
	if o.Log != nil {
		log = io.MultiWriter(steps, o.Log)
	}
	if _, err := readJSONStream(resp.Body, log); err != nil {
		resp.Body.Close() // the engine stops a build whose client has gone
		r.removeFailedStep(ctx, steps.last)
		return BuildResult{}, fmt.Errorf("build %s: %w", o.Tag, err)
	}
	id, err := r.ImageID(ctx, o.Tag)
	if err != nil {
		return BuildResult{}, fmt.Errorf("build %s: %w", o.Tag, err)
	}
	return BuildResult{ID: id, Duration: time.Since(start)}, nil
}

// BasePath says how EnsureBase made the base image available.
type BasePath string

const (
	BasePresent      BasePath = "present"
	BasePulled       BasePath = "pulled"
	BaseDebootstrapd BasePath = "debootstrap"
)

// BaseOptions configure EnsureBase.
type BaseOptions struct {
	Ref    string // default BaseImage
	Suite  string // default trixie
	Mirror string // default http://deb.debian.org/debian
	// SkipPull goes straight to debootstrap when the image is absent.
	SkipPull bool
	Log      io.Writer
	// Progress gets a line every half minute while debootstrap runs (it
	// says nothing itself for minutes); nil says nothing.
	Progress io.Writer
	// Platform of the tree: zero or the engine's own is imported as Ref
	// (default BaseImage); a foreign one is debootstrapped for its
	// architecture (under emulation) and built FROM scratch with the
	// platform set, since an engine 20.10 labels an import with its own
	// (Ref default: Platform.BaseRef()).
	Platform Platform
}

// Reasons EnsureBase cannot make the base image on this host.
var (
	ErrNoDebootstrap = errors.New("debootstrap is not installed")
	ErrNeedRoot      = errors.New("needs root")
)

// EnsureBase makes sure the base image exists: present → nothing; pullable
// → pull; otherwise debootstrap a minbase tree and import it.
func EnsureBase(ctx context.Context, d ImageStore, o BaseOptions) (BasePath, string, error) {
	o = o.withDefaults()
	id, err := d.ImageID(ctx, o.Ref)
	if err == nil {
		return BasePresent, id, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return "", "", err
	}
	var pullErr error
	// A foreign platform's base is rttlab's own tag: no registry has it.
	if !o.SkipPull && !o.Platform.Foreign() {
		if pullErr = d.PullImage(ctx, o.Ref); pullErr == nil {
			id, err := d.ImageID(ctx, o.Ref)
			return BasePulled, id, err
		}
		slog.Info("base image not pullable, building it with debootstrap", "ref", o.Ref, "pull_error", FirstLine(pullErr.Error()))
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", "", fmt.Errorf("base image %s is missing, cannot be pulled (%v) and %w", o.Ref, pullErr, ErrNoDebootstrap)
	}
	if os.Geteuid() != 0 {
		return "", "", fmt.Errorf("base image %s: debootstrap %w", o.Ref, ErrNeedRoot)
	}
	dir, err := os.MkdirTemp("", "rttlab-rootfs-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(dir)
	if err := debootstrap(ctx, dir, o); err != nil {
		return "", "", err
	}
	if o.Platform.Foreign() {
		err = buildRootfs(ctx, d, dir, o.Ref, o.Platform)
	} else {
		err = importRootfs(ctx, d, dir, o.Ref)
	}
	if err != nil {
		return "", "", err
	}
	id, err = d.ImageID(ctx, o.Ref)
	return BaseDebootstrapd, id, err
}

// withDefaults fills in the image, suite, mirror and log left empty.
func (o BaseOptions) withDefaults() BaseOptions {
	if o.Ref == "" {
		o.Ref = o.Platform.BaseRef()
	}
	if o.Suite == "" {
		o.Suite = "trixie"
	}
	if o.Mirror == "" {
		o.Mirror = "http://deb.debian.org/debian"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// debootstrap builds a minbase tree of o.Suite in dir, reporting progress
// to o.Progress, and removes the downloaded packages and lists from it.
func debootstrap(ctx context.Context, dir string, o BaseOptions) error {
	var out syncbuf.Buffer
	args := []string{"--variant=minbase"}
	if o.Platform.Arch != "" {
		args = append(args, "--arch="+o.Platform.Arch)
	}
	cmd := exec.CommandContext(ctx, "debootstrap", append(args, o.Suite, dir, o.Mirror)...)
	cmd.Stdout = io.MultiWriter(&out, o.Log)
	cmd.Stderr = cmd.Stdout
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "base image %s: not present; debootstrap %s from %s (a few minutes)\n", o.Ref, o.Suite, o.Mirror)
	}
	stop := tickProgress(o.Progress, func(el time.Duration) string {
		return fmt.Sprintf("  debootstrap %s: %d s so far, %s", o.Suite, int(el.Seconds()), debootstrapStage(out.String()))
	})
	err := cmd.Run()
	stop()
	if err != nil {
		return fmt.Errorf("debootstrap %s: %w\n%s", o.Suite, err, labrt.LastLines(out.String(), 10))
	}
	// Keep the image small: downloaded packages and lists are not needed.
	for _, g := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*_*"} {
		matches, _ := filepath.Glob(filepath.Join(dir, g))
		for _, m := range matches {
			os.Remove(m)
		}
	}
	return nil
}

// importRootfs imports the tree in dir as the image ref, streaming it
// through tar.
func importRootfs(ctx context.Context, d ImageStore, dir, ref string) error {
	tarCmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "-C", dir, "-c", ".")
	stdout, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	var tarErr bytes.Buffer
	tarCmd.Stderr = &tarErr
	if err := tarCmd.Start(); err != nil {
		return fmt.Errorf("tar rootfs: %w", err)
	}
	impErr := d.ImportImage(ctx, stdout, ref)
	// An import that stopped reading early leaves tar blocked on the full
	// pipe: closing it ends tar, so Wait returns.
	stdout.Close()
	waitErr := tarCmd.Wait()
	if impErr != nil {
		return impErr
	}
	if waitErr != nil {
		return fmt.Errorf("tar rootfs: %w: %s", waitErr, tarErr.String())
	}
	return nil
}

// buildRootfs makes the tree in dir the image ref of platform p: a build
// FROM scratch that adds the tree's tar, with the platform set, so that the
// image is labelled p (an import on engine 20.10 is labelled the engine's
// own platform, and a build FROM it for p is then refused).
func buildRootfs(ctx context.Context, d ImageStore, dir, ref string, p Platform) error {
	f, err := os.CreateTemp("", "rttlab-rootfs-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	tarCmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "-C", dir, "-c", ".")
	tarCmd.Stdout = f
	var tarErr bytes.Buffer
	tarCmd.Stderr = &tarErr
	if err := tarCmd.Run(); err != nil {
		return fmt.Errorf("tar rootfs: %w: %s", err, FirstLine(tarErr.String()))
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(rootfsContext(pw, f, fi.Size())) }()
	_, err = d.BuildImage(ctx, pr, BuildOptions{Tag: ref, Platform: p})
	pr.CloseWithError(io.ErrClosedPipe)
	return err
}

// rootfsContext writes the build context of buildRootfs: a Dockerfile
// that adds rootfs.tar (unpacked by ADD) to an empty image, and the tar.
func rootfsContext(w io.Writer, rootfs io.Reader, size int64) error {
	tw := tar.NewWriter(w)
	df := []byte("FROM scratch\nADD rootfs.tar /\nCMD [\"bash\"]\n")
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(df); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "rootfs.tar", Mode: 0o644, Size: size, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, rootfs); err != nil {
		return err
	}
	return tw.Close()
}

// Builder builds app images from the embedded contexts.
type Builder struct {
	Images ImageStore
	Apps   map[string]*apps.Meta
	FS     fs.FS  // the apps tree (apps.FS)
	GOOS   string // engine OS
	GOARCH string // engine arch
	// SrcDir is the module root used to cross-build Go programs; empty:
	// found from the working directory, RTTLAB_SRC, or the executable.
	SrcDir  string
	Version string // rttlab's version and commit, set in the agent's
	Commit  string // rttlab binary with -ldflags (no spaces)
	NoCache bool
	Log     io.Writer
	// Progress gets a line when a Go toolchain is downloaded; nil discards.
	Progress io.Writer
	// Platform the images are built for: tags, Go binaries (GOARCH is
	// its architecture) and the base the Dockerfiles start from follow
	// it. Zero: the engine's own, as GOOS and GOARCH say.
	Platform Platform
	// Native names the images built for the engine's own platform
	// whatever Platform says: rttlab's agent, which shapes and measures.
	Native []string
}

// platformOf is the platform the image name is built for.
func (b *Builder) platformOf(name string) Platform {
	if slices.Contains(b.Native, name) {
		return b.Platform.Native()
	}
	return b.Platform
}

// Built describes one built image.
type Built struct {
	App      string
	Tag      string
	ID       string
	Duration time.Duration
}

// Build builds the named apps' images (and their dependencies in order).
func (b *Builder) Build(ctx context.Context, names []string) ([]Built, error) {
	var out []Built
	for _, n := range names {
		m, ok := b.Apps[n]
		if !ok {
			return out, fmt.Errorf("unknown app %q (known: %s)", n, strings.Join(apps.Names(b.Apps, ""), ", "))
		}
		res, err := b.buildOne(ctx, m)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

func (b *Builder) buildOne(ctx context.Context, m *apps.Meta) (Built, error) {
	start := time.Now()
	p := b.platformOf(m.Name)
	if p.Arch != "" && p.Arch != b.GOARCH {
		// The Go programs are cross-built for the image's platform.
		bp := *b
		bp.GOOS, bp.GOARCH = p.OS, p.Arch
		b = &bp
	}
	extra := map[string][]byte{}
	for _, g := range m.GoBuild {
		bin, err := b.crossBuild(ctx, g)
		if err != nil {
			return Built{}, fmt.Errorf("build %s: %w", m.Name, err)
		}
		extra[g.Output] = bin
	}
	sub, err := fs.Sub(b.FS, m.Name)
	if err != nil {
		return Built{}, err
	}
	var stages []string
	if df, err := fs.ReadFile(sub, "Dockerfile"); err == nil {
		stages = namedStages(df)
		edited := labelStages(df, LabelApp, m.Name)
		if p.Foreign() {
			edited = rebase(edited, BaseImage, p.BaseRef())
		}
		if !bytes.Equal(edited, df) {
			extra["Dockerfile"] = edited
		}
	}
	var buf bytes.Buffer
	if err := TarContext(&buf, sub, extra); err != nil {
		return Built{}, fmt.Errorf("build %s: context: %w", m.Name, err)
	}
	tag := p.ImageRef(m.Name)
	old, _ := b.Images.ImageID(ctx, tag)
	res, err := b.Images.BuildImage(ctx, bytes.NewReader(buf.Bytes()), BuildOptions{
		Tag:       tag,
		Labels:    map[string]string{LabelApp: m.Name},
		BuildArgs: m.BuildArgs,
		NoCache:   b.NoCache,
		Log:       b.Log,
		Platform:  p,
	})
	if err != nil {
		return Built{}, fmt.Errorf("apps/%s: %w", m.Name, err)
	}
	b.removeReplaced(ctx, old, res.ID)
	if err := b.tagStages(ctx, m.Name, p, stages, buf.Bytes()); err != nil {
		return Built{}, fmt.Errorf("apps/%s: %w", m.Name, err)
	}
	return Built{App: m.Name, Tag: tag, ID: res.ID, Duration: time.Since(start)}, nil
}

// tagStages tags each named stage of a multi-stage build but the last,
// once the whole image is built from the build context tarCtx: the
// classic builder leaves an earlier stage's image untagged, and a tag
// keeps it (the next build's cache) without leaving an untagged image on
// the user's engine. Each stage is built again up to its end with the
// cache (also after --no-cache), so every step is the one the whole build
// just made and the tag lands on that very image; the stage carries its
// io.rttlab.app label from labelStages and gets no build label, which
// would add a step of its own.
func (b *Builder) tagStages(ctx context.Context, app string, p Platform, stages []string, tarCtx []byte) error {
	for _, st := range stages[:max(len(stages)-1, 0)] {
		tag := StageRef(p.ImageRef(app), st)
		old, _ := b.Images.ImageID(ctx, tag)
		res, err := b.Images.BuildImage(ctx, bytes.NewReader(tarCtx), BuildOptions{
			Tag: tag, Target: st, BuildArgs: b.Apps[app].BuildArgs, Log: b.Log, Platform: p,
		})
		if err != nil {
			return fmt.Errorf("stage %s: %w", st, err)
		}
		b.removeReplaced(ctx, old, res.ID)
	}
	return nil
}

// StageRef is the tag of the stage named stage of the image ref:
// rttlab/axum:latest-stage-build.
func StageRef(ref, stage string) string { return ref + "-stage-" + stage }

// namedStages returns the stage names of a Dockerfile, in order ("" for a
// stage without AS), or nil for a single stage. Only the stages before the
// last are tagged (tagStages), and only named ones can be.
func namedStages(df []byte) []string {
	var names []string
	for _, l := range strings.Split(string(df), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && strings.EqualFold(f[0], "FROM") {
			name := ""
			if len(f) >= 4 && strings.EqualFold(f[2], "AS") {
				name = f[3]
			}
			names = append(names, name)
		}
	}
	if len(names) < 2 {
		return nil
	}
	out := names[:0:0]
	for i, n := range names {
		if n != "" || i == len(names)-1 {
			out = append(out, n)
		}
	}
	return out
}

// ImagePruner removes an image that a build has replaced, unless a
// container still uses it; an ImageStore without it keeps the old image.
type ImagePruner interface {
	RemoveReplaced(ctx context.Context, id string) error
}

// removeReplaced removes the image old that the tag named before a build
// gave it the image now: otherwise every rebuild (the agent's, whenever
// rttlab's binary changes) leaves an untagged image behind. A failure is
// logged, not fatal: the build itself succeeded.
func (b *Builder) removeReplaced(ctx context.Context, old, now string) {
	p, ok := b.Images.(ImagePruner)
	if old == "" || old == now || !ok {
		return
	}
	if err := p.RemoveReplaced(ctx, old); err != nil {
		slog.Warn("the image a build replaced stays", "id", ShortID(old), "error", FirstLine(err.Error()))
	}
}

// rebase points the FROM lines of a Dockerfile that name base at to
// instead (a foreign platform's base); the file in the tree is unchanged.
func rebase(df []byte, base, to string) []byte {
	lines := strings.SplitAfter(string(df), "\n")
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) >= 2 && strings.EqualFold(f[0], "FROM") && f[1] == base {
			lines[i] = strings.Replace(l, base, to, 1)
		}
	}
	return []byte(strings.Join(lines, ""))
}

// labelStages labels every stage but the last of a multi-stage Dockerfile
// (build labels only reach the last): the classic builder leaves each
// earlier stage behind as an untagged image, which the label lets
// `rttlab clean --images` remove. The LABEL goes at the end of the stage so
// the cached steps before it stay cached.
func labelStages(df []byte, key, value string) []byte {
	lines := strings.SplitAfter(string(df), "\n")
	var out strings.Builder
	froms, cont := 0, false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		isFrom := !cont && len(t) > 5 && strings.EqualFold(t[:5], "FROM ") && !strings.HasPrefix(t, "#")
		if isFrom {
			if froms > 0 {
				fmt.Fprintf(&out, "LABEL %s=%q\n", key, value)
			}
			froms++
		}
		if !strings.HasPrefix(t, "#") {
			cont = strings.HasSuffix(t, "\\")
		}
		out.WriteString(l)
	}
	if froms < 2 {
		return df
	}
	return []byte(out.String())
}

// TarContext writes a deterministic tar of fsys plus extra files: sorted
// names, zero times, fixed owners, so unchanged contexts hit the build
// cache.
func TarContext(w io.Writer, fsys fs.FS, extra map[string][]byte) error {
	tw := tar.NewWriter(w)
	entries, err := contextEntries(fsys, extra)
	if err != nil {
		return err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !e.dir {
			if _, err := tw.Write(e.data); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// tarEntry is one folder or file of a build context.
type tarEntry struct {
	name string
	dir  bool
	data []byte
	mode int64
}

// contextEntries returns the entries of a build context, unsorted: the
// folders and files of fsys, but for those extra replaces and the Go
// sources at its top, then the extra files.
func contextEntries(fsys fs.FS, extra map[string][]byte) ([]tarEntry, error) {
	var entries []tarEntry
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if d.IsDir() {
			entries = append(entries, tarEntry{name: p + "/", dir: true, mode: 0o755})
			return nil
		}
		if _, ok := extra[p]; ok {
			return nil // replaced
		}
		if strings.HasSuffix(p, ".go") && path.Dir(p) == "." {
			// Go sources of a host-built program are not needed in the image.
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if strings.HasSuffix(p, ".sh") || strings.HasPrefix(string(data), "#!") {
			mode = 0o755
		}
		entries = append(entries, tarEntry{name: p, data: data, mode: mode})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for name, data := range extra {
		entries = append(entries, tarEntry{name: name, data: data, mode: 0o755})
	}
	return entries, nil
}

// ModulePath is this module's import path, used to find the source tree.
const ModulePath = "github.com/rttlab/rttlab"

// FindSource returns the module root: RTTLAB_SRC, or the first folder
// upwards from the working directory or the executable holding our go.mod.
func FindSource() (string, error) {
	if s := os.Getenv("RTTLAB_SRC"); s != "" {
		return s, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, s := range starts {
		for dir := s; ; dir = filepath.Dir(dir) {
			data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err == nil && strings.Contains(string(data), "module "+ModulePath+"\n") {
				return dir, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", errors.New("the rttlab source tree was not found: run from a checkout or set RTTLAB_SRC to it")
}

// findSource finds the checkout; tests replace it.
var findSource = FindSource

// Where a Go program of an image is built from.
const (
	fromCheckout = "checkout" // the module root: today's build
	fromEmbedded = "embedded" // the source embedded in the binary (apps/<name>)
	fromSelf     = "self"     // the running binary (the agent's rttlab)
)

// goSource says where crossBuild takes a program from: the checkout when
// there is one; otherwise the running binary for rttlab itself when it fits
// the engine, or the embedded apps tree for an app's program.
func (b *Builder) goSource(g apps.GoBuild) (kind, src string, err error) {
	src = b.SrcDir
	if src == "" {
		src, err = findSource()
	}
	if err == nil {
		return fromCheckout, src, nil
	}
	if g.Package == "./cmd/rttlab" && b.GOOS == "linux" && b.GOARCH == hostArch() {
		return fromSelf, "", nil
	}
	if name, ok := strings.CutPrefix(g.Package, "./apps/"); ok && b.FS != nil && !strings.Contains(name, "/") {
		if gos, _ := fs.Glob(b.FS, name+"/*.go"); len(gos) > 0 {
			return fromEmbedded, name, nil
		}
	}
	return "", "", fmt.Errorf("cross-build %s: %w", g.Package, err)
}

func (b *Builder) progress() io.Writer {
	if b.Progress != nil {
		return b.Progress
	}
	return io.Discard
}

func (b *Builder) crossBuild(ctx context.Context, g apps.GoBuild) ([]byte, error) {
	kind, src, err := b.goSource(g)
	if err != nil {
		return nil, err
	}
	if kind == fromSelf {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("cross-build %s: %w", g.Package, err)
		}
		return os.ReadFile(exe)
	}
	tmp, err := os.MkdirTemp("", "rttlab-gobuild-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dir, pkg, need := src, g.Package, ""
	var flags []string
	if kind == fromCheckout {
		need, err = goDirective(filepath.Join(src, "go.mod"))
		if err != nil {
			return nil, fmt.Errorf("cross-build %s: %w", g.Package, err)
		}
	} else {
		rel, err := releaseVersion(runtime.Version())
		if err != nil {
			return nil, fmt.Errorf("cross-build %s from the embedded source: %w (build from a checkout: RTTLAB_SRC)", g.Package, err)
		}
		need = strings.TrimPrefix(rel, "go")
		dir, pkg = filepath.Join(tmp, "src"), "."
		if err := b.writeEmbedded(src, dir, need); err != nil {
			return nil, fmt.Errorf("cross-build %s from the embedded source: %w", g.Package, err)
		}
		// The generated go.mod gets its go.sum from the module proxy and
		// checksum database; a user's -mod=vendor or workspace must not
		// apply to it.
		flags = append(flags, "-mod=mod")
	}
	tool, err := findGo(ctx, need, b.progress())
	if err != nil {
		return nil, fmt.Errorf("cross-build %s: %w", g.Package, err)
	}
	out := filepath.Join(tmp, g.Output)
	args := []string{"build", "-trimpath", "-buildvcs=false", "-o", out}
	args = append(args, b.versionFlags(g)...)
	args = append(args, pkg)
	cmd := exec.CommandContext(ctx, tool.Path, args...)
	cmd.Dir = dir
	cmd.Env = b.goBuildEnv(kind, tool, flags)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go build %s (%s source) for %s/%s: %w\n%s", g.Package, kind, b.GOOS, b.GOARCH, err, labrt.LastLines(string(msg), 15))
	}
	return os.ReadFile(out)
}

// versionFlags returns the -ldflags that stamp rttlab's version and commit
// into g, or none. Only rttlab itself carries its version: app binaries
// stay byte-identical across rttlab versions, so their images stay cached.
func (b *Builder) versionFlags(g apps.GoBuild) []string {
	if b.Version == "" || g.Package != "./cmd/rttlab" {
		return nil
	}
	ld := "-X main.version=" + strings.ReplaceAll(b.Version, " ", "_")
	if b.Commit != "" {
		ld += " -X main.commit=" + strings.ReplaceAll(b.Commit, " ", "_")
	}
	return []string{"-ldflags", ld}
}

// goBuildEnv returns the environment of a go build of a kind source with
// tool: cross-compiling without cgo, with the tool's settings, and flags
// plus the tool's in GOFLAGS (alone, and outside any workspace, for the
// embedded source).
func (b *Builder) goBuildEnv(kind string, tool goTool, flags []string) []string {
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS="+b.GOOS, "GOARCH="+b.GOARCH)
	env = append(env, tool.Env...)
	flags = append(flags, tool.Flags...)
	if kind == fromEmbedded {
		env = append(env, "GOWORK=off", "GOFLAGS="+strings.Join(flags, " "))
	} else if len(flags) > 0 {
		env = append(env, "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" "+strings.Join(flags, " ")))
	}
	return env
}

// writeEmbedded writes the embedded apps/<name> package as its own module.
func (b *Builder) writeEmbedded(name, dir, goVersion string) error {
	pkg, err := fs.Sub(b.FS, name)
	if err != nil {
		return err
	}
	imports, err := embeddedImports(pkg)
	if err != nil {
		return err
	}
	deps, err := buildDeps()
	if err != nil {
		return err
	}
	mod, err := embeddedGoMod(ModulePath+"/apps/"+name, goVersion, imports, deps)
	if err != nil {
		return err
	}
	return writeEmbeddedModule(pkg, dir, mod)
}

// buildDeps returns the modules this binary was built with; tests replace
// it (a test binary's build info lists none).
var buildDeps = func() ([]*debug.Module, error) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil, errors.New("this binary carries no build info")
	}
	return bi.Deps, nil
}

// goDirective returns the Go release a go.mod needs: its toolchain line
// when newer, else its go line.
func goDirective(goMod string) (string, error) {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(goMod, data, nil)
	if err != nil {
		return "", err
	}
	if f.Go == nil {
		return "1.16", nil // the go command's default for a go.mod without one
	}
	need := f.Go.Version
	// ParseLax leaves f.Toolchain nil (toolchain is a main module's
	// directive): read the line from the syntax.
	for _, st := range f.Syntax.Stmt {
		if l, ok := st.(*modfile.Line); ok && len(l.Token) == 2 && l.Token[0] == "toolchain" {
			if tc := strings.TrimPrefix(l.Token[1], "go"); version.Compare("go"+tc, "go"+need) > 0 {
				need = tc
			}
		}
	}
	return need, nil
}

func hostArch() string { return runtime.GOARCH }

// SkipReason recognises a build that failed for want of network access to
// a package registry this host cannot reach: the app's Dockerfile prints
// one line saying "needs network access to ...". Such an app is skipped
// with that line as the reason; any other failure is an error.
func SkipReason(err error) (string, bool) {
	var se *StreamError
	if !errors.As(err, &se) {
		return "", false
	}
	lines := append(se.Tail, se.Msg)
	// The last match is the line the build printed, not the step's
	// command text that contains it.
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.Contains(l, "needs network access to") && !strings.HasPrefix(l, "Step ") && !strings.Contains(l, "/bin/sh -c") {
			return l, true
		}
	}
	return "", false
}

// debootstrapStage says where debootstrap is from its "I: ..." lines:
// "unpacking (57 packages so far)" or its last line.
func debootstrapStage(out string) string {
	var last string
	counts := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "I: ") {
			continue
		}
		last = strings.TrimPrefix(l, "I: ")
		for _, verb := range []string{"Retrieving", "Validating", "Extracting", "Unpacking", "Configuring"} {
			if strings.HasPrefix(last, verb+" ") {
				counts[verb]++
			}
		}
	}
	if last == "" {
		return "resolving packages"
	}
	for _, verb := range []string{"Configuring", "Unpacking", "Extracting", "Validating", "Retrieving"} {
		if strings.HasPrefix(last, verb+" ") {
			return fmt.Sprintf("%s (%d packages so far)", strings.ToLower(verb), counts[verb])
		}
	}
	return strings.ToLower(last[:1]) + last[1:]
}

// trimArchTag drops what rttlab adds after :latest: a foreign platform's
// architecture (Platform.ImageRef) and a stage's name (StageRef):
// rttlab/axum:latest-<arch>-stage-build → rttlab/axum:latest.
func trimArchTag(t string) string {
	head, rest, ok := strings.Cut(t, ":latest-")
	if !ok {
		return t
	}
	if i := strings.Index(rest, "stage-"); i >= 0 && (i == 0 || rest[i-1] == '-') && !strings.ContainsAny(rest[i:], ":/") {
		rest = strings.TrimSuffix(rest[:i], "-")
	}
	if _, known := qemuNames[rest]; rest == "" || known {
		return head + ":latest"
	}
	return t
}

// BuiltByRttlab tells an image rttlab built (tagged <prefix><app>:latest
// for the app its io.rttlab.app label names, or untagged) from a user's
// image that inherited the label by building FROM one of rttlab's.
func BuiltByRttlab(tags []string, labels map[string]string) bool {
	app := labels[LabelApp]
	if app == "" {
		return false
	}
	for _, t := range tags {
		if t == "<none>:<none>" {
			continue
		}
		t = trimArchTag(t)
		if !strings.HasSuffix(t, app+":latest") {
			return false
		}
		if rest := strings.TrimSuffix(t, app+":latest"); rest != "" && !strings.HasSuffix(rest, "/") && !strings.HasSuffix(rest, "-") {
			return false
		}
	}
	return true
}
