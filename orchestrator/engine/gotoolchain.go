package engine

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/version"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/dirhash"
)

// The Go toolchain that cross-builds the Go programs of the images: the go
// command on PATH when it is new enough, otherwise the release this very
// binary was built with, downloaded once the way the go command switches
// toolchains (module golang.org/toolchain from the module proxy, checked
// against the checksum database) and kept under the user's cache folder.
// So a person who installed only the rttlab binary needs no Go install.

// toolchainModule is the module the Go distributions are published as.
const toolchainModule = "golang.org/toolchain"

// releaseVersion turns a Go version as runtime.Version or a go directive
// spells it ("go1.26.8", "1.26.8", "go1.26.8 X:exp", "1.26") into the
// release name "go1.26.8"; a go directive without a patch release names
// the first release of that line (1.26 → go1.26.0). Development builds
// have no release to download.
func releaseVersion(v string) (string, error) {
	v = strings.TrimSpace(v)
	if f := strings.Fields(v); len(f) > 0 {
		v = f[0]
	}
	if !strings.HasPrefix(v, "go") {
		v = "go" + v
	}
	if !version.IsValid(v) || strings.HasPrefix(v, "devel") {
		return "", fmt.Errorf("Go version %q is not a release that can be downloaded", v)
	}
	if lang := version.Lang(v); lang == v && version.Compare(v, "go1.21") >= 0 {
		v += ".0"
	}
	return v, nil
}

// toolchainModVersion is the module version of a release for one host:
// v0.0.1-go1.26.8.GOOS-GOARCH.
func toolchainModVersion(release, goos, goarch string) string {
	return "v0.0.1-" + release + "." + goos + "-" + goarch
}

// toolchainSource says where the toolchain comes from.
type toolchainSource struct {
	Proxy  string // module proxy base URL, no trailing slash
	SumDB  string // checksum database base URL; "" skips the check (GOSUMDB=off)
	Client *http.Client
}

// zipURL and lookupURL name the module zip and its checksum database entry.
func (s toolchainSource) zipURL(modVersion string) string {
	return s.Proxy + "/" + toolchainModule + "/@v/" + modVersion + ".zip"
}

func (s toolchainSource) lookupURL(modVersion string) string {
	return s.SumDB + "/lookup/" + toolchainModule + "@" + modVersion
}

// lookupURLs lists where the checksum database answers, in order: through
// the module proxy (as the go command tries first, for hosts that reach
// only the proxy), then directly.
func (s toolchainSource) lookupURLs(modVersion string) []string {
	host := strings.TrimPrefix(strings.TrimPrefix(s.SumDB, "https://"), "http://")
	var out []string
	if strings.HasPrefix(s.Proxy, "http") && !strings.Contains(host, "/") {
		out = append(out, s.Proxy+"/sumdb/"+host+"/lookup/"+toolchainModule+"@"+modVersion)
	}
	return append(out, s.lookupURL(modVersion))
}

// errNoDownload is why a toolchain cannot be fetched under the user's Go
// settings; the message names the fix.
var errNoDownload = errors.New("toolchain download is turned off")

// sourceFromEnv reads GOPROXY, GOSUMDB and GOTOOLCHAIN as the go command
// does, refusing a download the user has turned off.
func sourceFromEnv(getenv func(string) string, release string) (toolchainSource, error) {
	fix := fmt.Sprintf("install Go %s or later (https://go.dev/dl) and put it on PATH", strings.TrimPrefix(release, "go"))
	tc := getenv("GOTOOLCHAIN")
	if tc == "local" || tc == "path" || strings.HasSuffix(tc, "+path") {
		return toolchainSource{}, fmt.Errorf("%w by GOTOOLCHAIN=%s: %s, or unset GOTOOLCHAIN", errNoDownload, tc, fix)
	}
	src := toolchainSource{Proxy: "https://proxy.golang.org", SumDB: "https://sum.golang.org"}
	if p := getenv("GOPROXY"); p != "" {
		src.Proxy = ""
		for _, e := range strings.FieldsFunc(p, func(r rune) bool { return r == ',' || r == '|' }) {
			e = strings.TrimSpace(e)
			if e == "off" {
				break
			}
			if strings.HasPrefix(e, "https://") || strings.HasPrefix(e, "http://") || strings.HasPrefix(e, "file://") {
				src.Proxy = strings.TrimRight(e, "/")
				break
			}
		}
		if src.Proxy == "" {
			return toolchainSource{}, fmt.Errorf("%w by GOPROXY=%s: %s, or set GOPROXY=https://proxy.golang.org", errNoDownload, p, fix)
		}
	}
	switch db := getenv("GOSUMDB"); {
	case db == "off":
		src.SumDB = ""
	case db == "" || strings.HasPrefix(db, "sum.golang.org"):
		if f := strings.Fields(db); len(f) == 2 {
			src.SumDB = strings.TrimRight(f[1], "/")
		}
	default:
		f := strings.Fields(db)
		if len(f) == 2 {
			src.SumDB = strings.TrimRight(f[1], "/")
		} else {
			src.SumDB = "https://" + strings.TrimRight(strings.SplitN(f[0], "+", 2)[0], "/")
		}
	}
	return src, nil
}

// parseLookup finds the h1: hash of a module version's zip in a checksum
// database lookup answer.
func parseLookup(body []byte, mod, modVersion string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == mod && f[1] == modVersion && strings.HasPrefix(f[2], "h1:") {
			return f[2], nil
		}
	}
	return "", fmt.Errorf("checksum database has no hash for %s@%s", mod, modVersion)
}

// checkZip compares a downloaded module zip with its checksum database hash.
func checkZip(zipPath, want string) error {
	got, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("checksum mismatch: downloaded %s, checksum database says %s", got, want)
	}
	return nil
}

// unpackToolchain installs a verified toolchain zip as dir/<release>:
// it is unpacked into a temporary folder beside it and renamed into
// place, so concurrent runs never see (or leave) a half-written tree;
// the run that loses the rename uses the winner's.
func unpackToolchain(zipPath, dir, release, modVersion string) (string, error) {
	final := filepath.Join(dir, release)
	if usable(final) {
		return final, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "."+release+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return "", err
	}
	defer zr.Close()
	prefix := toolchainModule + "@" + modVersion + "/"
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || name == "" || strings.HasSuffix(name, "/") {
			continue
		}
		if !filepath.IsLocal(name) {
			return "", fmt.Errorf("toolchain zip: bad file name %q", f.Name)
		}
		// Module zips carry no modes: the commands are made executable
		// as the go command does when it switches toolchains.
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "bin/") || strings.HasPrefix(name, "pkg/tool/") {
			mode = 0o755
		}
		if err := writeZipFile(f, filepath.Join(tmp, filepath.FromSlash(name)), mode); err != nil {
			return "", err
		}
	}
	if !usable(tmp) {
		return "", fmt.Errorf("toolchain zip %s has no bin/go", modVersion)
	}
	if err := os.Rename(tmp, final); err != nil {
		if usable(final) {
			return final, nil // another run installed it first
		}
		return "", err
	}
	return final, nil
}

func writeZipFile(f *zip.File, dst string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// usable reports whether dir holds an installed toolchain.
func usable(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "bin", goExe()))
	return err == nil && st.Mode().IsRegular()
}

func goExe() string {
	if runtime.GOOS == "windows" {
		return "go.exe"
	}
	return "go"
}

// ToolchainDir is where downloaded toolchains are kept.
func ToolchainDir() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for the Go toolchain: %w", err)
	}
	return filepath.Join(c, "rttlab", "toolchain"), nil
}

// installToolchain downloads, checks and unpacks a release for this host
// into dir, printing a line before and after (the zip is ~70 MB).
func installToolchain(ctx context.Context, src toolchainSource, dir, release string, progress io.Writer) (string, error) {
	return installToolchainFor(ctx, src, dir, release, runtime.GOOS, runtime.GOARCH, progress)
}

// installToolchainFor is installToolchain for the host goos/goarch.
func installToolchainFor(ctx context.Context, src toolchainSource, dir, release, goos, goarch string, progress io.Writer) (string, error) {
	if final := filepath.Join(dir, release); usable(final) {
		return final, nil
	}
	mv := toolchainModVersion(release, goos, goarch)
	client := src.Client
	if client == nil {
		client = http.DefaultClient
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	start := time.Now()
	fmt.Fprintf(progress, "downloading Go toolchain %s for %s/%s (about 70 MB, once) into %s\n", release, goos, goarch, dir)
	want := ""
	if src.SumDB != "" {
		var err error
		for _, u := range src.lookupURLs(mv) {
			var body []byte
			if body, err = httpGet(ctx, client, u, nil); err == nil {
				want, err = parseLookup(body, toolchainModule, mv)
				break
			}
		}
		if err != nil {
			return "", err
		}
	}
	zf, err := os.CreateTemp(dir, "."+release+"-*.zip")
	if err != nil {
		return "", err
	}
	defer os.Remove(zf.Name())
	_, err = httpGet(ctx, client, src.zipURL(mv), zf)
	if cerr := zf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if want != "" {
		if err := checkZip(zf.Name(), want); err != nil {
			return "", fmt.Errorf("%s@%s: %w", toolchainModule, mv, err)
		}
	}
	st, _ := os.Stat(zf.Name())
	final, err := unpackToolchain(zf.Name(), dir, release, mv)
	if err != nil {
		return "", err
	}
	var size int64
	if st != nil {
		size = st.Size()
	}
	fmt.Fprintf(progress, "Go toolchain %s ready (%.1f MB in %.1fs)\n", release, float64(size)/1e6, time.Since(start).Seconds())
	return final, nil
}

// httpGet fetches url into w, or returns the body when w is nil.
func httpGet(ctx context.Context, client *http.Client, url string, w io.Writer) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download Go toolchain: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download Go toolchain: GET %s: %s", url, resp.Status)
	}
	if w == nil {
		return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	_, err = io.Copy(w, resp.Body)
	if err != nil {
		err = fmt.Errorf("download Go toolchain: GET %s: %w", url, err)
	}
	return nil, err
}

// goTool is a go command and the environment to run it with.
type goTool struct {
	Path       string
	Downloaded bool
	Env        []string // added to os.Environ()
	Flags      []string // added to GOFLAGS
}

// findGo returns a go command at least as new as need (a go directive or
// release): the one on PATH, or a downloaded release (the running
// binary's when new enough, so one download serves every build).
func findGo(ctx context.Context, need string, progress io.Writer) (goTool, error) {
	needRel, err := releaseVersion(need)
	if err != nil {
		return goTool{}, err
	}
	if p, err := exec.LookPath("go"); err == nil {
		cmd := exec.CommandContext(ctx, p, "env", "GOVERSION")
		cmd.Dir = os.TempDir() // outside any module that would switch toolchains
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		if out, err := cmd.Output(); err == nil && version.Compare(strings.TrimSpace(string(out)), needRel) >= 0 {
			return goTool{Path: p}, nil
		}
	}
	release := needRel
	if own, err := releaseVersion(runtime.Version()); err == nil && version.Compare(own, needRel) >= 0 {
		release = own
	}
	src, err := sourceFromEnv(os.Getenv, release)
	if err != nil {
		return goTool{}, fmt.Errorf("no go command %s or later on PATH and the %w", strings.TrimPrefix(needRel, "go"), err)
	}
	dir, err := ToolchainDir()
	if err != nil {
		return goTool{}, err
	}
	root, err := installToolchain(ctx, src, dir, release, progress)
	if err != nil {
		return goTool{}, err
	}
	t := goTool{Path: filepath.Join(root, "bin", goExe()), Downloaded: true, Env: []string{"GOTOOLCHAIN=local"}}
	// A person without Go gets its module cache beside the toolchain
	// (writable, so removing the cache folder works) instead of ~/go.
	if os.Getenv("GOMODCACHE") == "" && os.Getenv("GOPATH") == "" {
		t.Env = append(t.Env, "GOMODCACHE="+filepath.Join(filepath.Dir(dir), "gomod"))
		t.Flags = append(t.Flags, "-modcacherw")
	}
	return t, nil
}
