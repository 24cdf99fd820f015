package stack

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/capped"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// Defaults of an own app's port and health path.
const (
	OwnAppPort   = 8080
	OwnAppHealth = "/"
)

// ValidEnvKey tells whether k can name an environment variable.
func ValidEnvKey(k string) bool { return envKeyRE.MatchString(k) }

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsTreeApp reports whether name is one of rttlab's own apps in all (an
// app of the tree or a variant of one), which an own app may not take.
func IsTreeApp(all map[string]*apps.Meta, name string) bool {
	if m, ok := all[name]; ok {
		return m.Image == "" && m.Running == nil
	}
	_, err := apps.Resolve(all, name)
	return err == nil
}

// OwnAppName derives an app name from an image reference:
// registry.example/team/shop-api:1.2 -> shop-api.
func OwnAppName(image string) string {
	ref := image
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndexByte(ref, '/'); i >= 0 {
		ref = ref[i+1:]
	}
	if i := strings.IndexByte(ref, ':'); i >= 0 {
		ref = ref[:i]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(ref) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		name = "app-" + name
	}
	if len(name) > 31 {
		name = strings.TrimRight(name[:31], "-")
	}
	return name
}

// TargetImage is the image a target runs: the user's, or the one rttlab
// builds for the app on platform p.
func TargetImage(t apps.Target, p engine.Platform) string {
	if t.Image != "" {
		return t.Image
	}
	return p.ImageRef(t.Meta.Name)
}

// ParseEnvFlag parses one K=V of --env.
func ParseEnvFlag(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || !envKeyRE.MatchString(k) {
		return "", "", fmt.Errorf("--env %q: use NAME=VALUE with a variable name of letters, digits and _", s)
	}
	return k, v, nil
}

// ReadEnvFile reads an env file: NAME=VALUE lines, # comments and blank
// lines, an optional "export " prefix and quotes around the value.
func ReadEnvFile(path string) (map[string]string, error) {
	data, err := capped.ReadFile(path, "env file", maxEnvFile)
	if err != nil {
		return nil, err
	}
	return ParseEnvFile(path, data)
}

// maxEnvFile bounds an env file (and so each of its lines).
const maxEnvFile = 1 << 20

// ParseEnvFile parses env file content; errors name path:line and quote
// at most the start of a bad line.
func ParseEnvFile(path string, data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxEnvFile+1)
	n := 1
	for ; sc.Scan(); n++ {
		raw := sc.Text()
		if i := strings.IndexByte(raw, 0); i >= 0 || !utf8.ValidString(raw) {
			return nil, fmt.Errorf("%s:%d: not a text file (a NUL byte or invalid UTF-8): give NAME=VALUE lines", path, n)
		}
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !envKeyRE.MatchString(k) {
			return nil, fmt.Errorf("%s:%d: %q is not NAME=VALUE", path, n, engine.Truncate(line, 60))
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: cannot read the line: %v", path, n, err)
	}
	return out, nil
}

// InitFile is one file applied to the database of an own app.
type InitFile struct {
	Path string // on the host
	// Kind: "sql" (psql: plain SQL and plain pg_dump) or "custom" (a
	// pg_dump custom-format archive: pg_restore).
	Kind string
}

// pgdumpMagic starts a pg_dump custom-format archive.
var pgdumpMagic = []byte("PGDMP")

// ExpandDBInit lists the files of --db-init inputs in the order they are
// applied: each path in turn; a folder's .sql files in name order.
func ExpandDBInit(paths []string) ([]InitFile, error) {
	var out []InitFile
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--db-init %s: no such file or folder", p)
		}
		if !fi.IsDir() {
			k, err := initKind(p)
			if err != nil {
				return nil, err
			}
			out = append(out, InitFile{Path: p, Kind: k})
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("--db-init %s: %w", p, err)
		}
		var names []string
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".sql") {
				names = append(names, e.Name())
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("--db-init %s: the folder holds no .sql file", p)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, InitFile{Path: filepath.Join(p, n), Kind: "sql"})
		}
	}
	return out, nil
}

// maxInitFile bounds one database init file, which is sent to the engine
// whole: a dump larger than this is loaded by the user's own image.
const maxInitFile = 1 << 30

func initKind(p string) (string, error) {
	f, err := capped.Open(p, "--db-init")
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, len(pgdumpMagic))
	n, _ := io.ReadFull(f, head)
	if bytes.Equal(head[:n], pgdumpMagic) {
		return "custom", nil
	}
	return "sql", nil
}

var psqlErrRE = regexp.MustCompile(`^psql:(.+?):(\d+): (ERROR|FATAL|error):\s+(.*)$`)

// ParsePsqlError finds psql's error line ("psql:FILE:LINE: ERROR:  msg")
// in its stderr; ok is false when there is none.
func ParsePsqlError(stderr string) (file string, line int, msg string, ok bool) {
	for _, l := range strings.Split(stderr, "\n") {
		m := psqlErrRE.FindStringSubmatch(strings.TrimRight(l, "\r"))
		if m == nil {
			continue
		}
		line, _ = strconv.Atoi(m[2])
		return m[1], line, m[3] + ": " + m[4], true
	}
	return "", 0, "", false
}

// firstErrorLine returns the first line of s that reports an error (a
// pg_restore "error:" line), else its first non-empty line.
func firstErrorLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "error:") || strings.Contains(l, "ERROR:") {
			return strings.TrimSpace(l)
		}
	}
	return engine.FirstLine(strings.TrimSpace(s))
}

// initDir receives the init files inside the database container.
const initDir = "/tmp/rttlab-init"

// copyTo extracts tarball into the folder dir of member id: by the
// runtime's own copy (runtime.Copier), else by tar run in the member.
func copyTo(ctx context.Context, d runtime.Execer, id, dir string, tarball io.Reader) error {
	if c, ok := d.(runtime.Copier); ok {
		return c.CopyTo(ctx, id, dir, tarball)
	}
	var stderr bytes.Buffer
	code, err := d.Exec(ctx, id, runtime.ExecSpec{Cmd: []string{"tar", "-x", "-C", dir}, Stdin: tarball, Stderr: &stderr})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("tar -x -C %s exited %d: %s", dir, code, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// ApplyDBInit copies the init files into the database container and
// applies them in order as the app's role (so that the app owns what
// they create): psql -v ON_ERROR_STOP=1 for SQL, pg_restore for a
// custom-format dump. A failure is one line naming the host file, the
// line and PostgreSQL's error.
func ApplyDBInit(ctx context.Context, d runtime.Execer, st *Stack, files []InitFile) error {
	db := st.Role("db")
	if db == nil {
		return fmt.Errorf("stack %s has no database", st.RunID)
	}
	if len(files) == 0 {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	inside := make([]string, len(files))
	if err := tw.WriteHeader(&tar.Header{Name: "rttlab-init/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	for i, f := range files {
		data, err := capped.ReadFile(f.Path, "db_init file", maxInitFile)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%03d-%s", i+1, filepath.Base(f.Path))
		inside[i] = initDir + "/" + name
		if err := tw.WriteHeader(&tar.Header{Name: "rttlab-init/" + name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := copyTo(ctx, d, db.ID, "/tmp", &buf); err != nil {
		return fmt.Errorf("--db-init: %w", err)
	}
	conn := []string{"-h", "127.0.0.1", "-U", st.DB.User, "-d", st.DB.Database}
	for i, f := range files {
		var cmd []string
		if f.Kind == "custom" {
			cmd = append(append([]string{"pg_restore", "--no-owner", "--no-privileges", "--exit-on-error"}, conn...), inside[i])
		} else {
			cmd = append(append([]string{"psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"}, conn...), "-f", inside[i])
		}
		var errb bytes.Buffer
		code, err := d.Exec(ctx, db.ID, runtime.ExecSpec{Cmd: cmd, User: "postgres", Env: []string{"PGPASSWORD=" + st.DB.Password},
			Stderr: &errb, Timeout: 10 * time.Minute})
		if err != nil {
			return fmt.Errorf("--db-init %s: %w", f.Path, err)
		}
		if code == 0 {
			continue
		}
		if _, line, msg, ok := ParsePsqlError(errb.String()); ok {
			return fmt.Errorf("--db-init %s:%d: %s", f.Path, line, msg)
		}
		return fmt.Errorf("--db-init %s: %s exited %d: %s", f.Path, cmd[0], code, firstErrorLine(errb.String()))
	}
	return nil
}

// OwnImageMissing is the line for a user's image that is not on the
// engine.
func OwnImageMissing(ref string) error {
	return fmt.Errorf("image %s is not present locally: build or pull it first", ref)
}

// CheckOwnImage returns the ID of a user's image, or OwnImageMissing when
// the engine does not have it. rttlab never builds or pulls it.
func CheckOwnImage(ctx context.Context, d engine.ImageStore, ref string) (string, error) {
	id, err := d.ImageID(ctx, ref)
	if errors.Is(err, engine.ErrNotFound) {
		return "", OwnImageMissing(ref)
	}
	return id, err
}
