package orchestrator

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/capped"
	"github.com/rttlab/rttlab/internal/planfile"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/workloads"
)

// A user's own app is a plan entry with image: instead of an app of this
// tree: rttlab runs the image as it is (never builds, retags or removes
// it) against its PostgreSQL, initialised by the user's SQL files or
// pg_dump, and drives the routes the entry names.

// Defaults of an own app's port and health path.
const (
	OwnAppPort   = 8080
	OwnAppHealth = "/"
)

// ownAppFieldError is a bad own-app field of the plan entry of app: a
// planfile.FieldError whose path names the entry by its name, so that a
// plan read from a file gets the field's line.
func ownAppFieldError(app, field, msg string) error {
	return &planfile.FieldError{Path: "apps[name=" + app + "]." + field, Err: fmt.Errorf("app %s: %s", app, msg)}
}

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidateOwnApp checks the fields of a plan entry that names an image
// (and that an entry without one sets none of them). Paths of db_init are
// checked for existence here, before anything starts.
func ValidateOwnApp(a PlanApp) error {
	if !a.Own() {
		return validateNotOwn(a)
	}
	if err := validateOwnSource(a); err != nil {
		return err
	}
	if !apps.ValidName(a.Name) {
		return a.badField("name", "name %q is invalid: use lower-case letters, digits and '-'", a.Name)
	}
	if a.Mix != "" {
		return a.badField("mix", "a mix drives rttlab's own redmine and aimeos apps; give routes or a request_mix for an image")
	}
	if err := validateRequestMix(a); err != nil {
		return err
	}
	if err := validateOwnContainer(a); err != nil {
		return err
	}
	return validateOwnStatements(a)
}

// badField is an error of the entry's field, its message formatted from
// format and args.
func (a PlanApp) badField(field, format string, args ...any) error {
	return ownAppFieldError(a.Name, field, fmt.Sprintf(format, args...))
}

// validateNotOwn checks that an entry rttlab builds from apps/ sets none
// of the fields of an app given by image: or compose:.
func validateNotOwn(a PlanApp) error {
	for _, f := range []struct {
		name string
		set  bool
	}{{"port", a.Port != 0}, {"health", a.Health != ""}, {"db_init", len(a.DBInit) > 0}, {"env", len(a.Env) > 0}, {"env_file", a.EnvFile != ""},
		{"statements", len(a.Statements) > 0}, {"app_service", a.AppService != ""}, {"db_service", a.DBService != ""},
		{"request_mix", a.RequestMix != nil}} {
		if f.set {
			return a.badField(f.name, "%s applies to an app given by image: or compose: (rttlab builds its own apps from apps/)", f.name)
		}
	}
	return nil
}

// validateOwnSource checks where an own app comes from: an image
// reference, or a compose file that loads and has the services named.
func validateOwnSource(a PlanApp) error {
	if a.Image != "" && a.Compose != "" {
		return a.badField("compose", "give image: or compose:, not both (a compose entry runs its app service's image)")
	}
	if a.Compose != "" {
		// A file that does not load is the compose: line's error; only then
		// are the services checked against it.
		p, err := LoadUserCompose(context.Background(), a.Compose)
		if err != nil {
			return a.badField("compose", "%v", err)
		}
		if field, err := checkComposeServices(p, a.composeRef()); err != nil {
			return a.badField(field, "%v", err)
		}
	} else if a.AppService != "" || a.DBService != "" {
		return a.badField("app_service", "app_service and db_service name services of a compose: file; an image: entry has none")
	}
	if strings.ContainsAny(a.Image, " \t\n") {
		return a.badField("image", "image %q is not an image reference", a.Image)
	}
	return nil
}

// validateOwnContainer checks how an own app's container runs: its port,
// health path, environment, env file and the db_init paths (which must
// exist).
func validateOwnContainer(a PlanApp) error {
	if a.Port < 0 || a.Port > 65535 {
		return a.badField("port", "port %d is out of range 1-65535", a.Port)
	}
	if a.Health != "" && !strings.HasPrefix(a.Health, "/") {
		return a.badField("health", "health %q must be a path starting with /", a.Health)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		if !envKeyRE.MatchString(k) {
			return a.badField("env", "env %q is not a variable name", k)
		}
	}
	if a.EnvFile != "" {
		if _, err := ReadEnvFile(a.EnvFile); err != nil {
			return a.badField("env_file", "%v", err)
		}
	}
	for _, p := range a.DBInit {
		if _, err := os.Stat(p); err != nil {
			return a.badField("db_init", "db_init %s: no such file or folder", p)
		}
	}
	return nil
}

// validateOwnStatements checks the statements an own app declares: for
// its routes only (not with a request_mix), none negative.
func validateOwnStatements(a PlanApp) error {
	if a.RequestMix != nil && len(a.Statements) > 0 {
		return a.badField("statements", "statements declare counts of routes; a request_mix's counts are reported, not asserted")
	}
	rs := map[string]bool{}
	for _, r := range a.Routes {
		path, _, _ := strings.Cut(r, "?")
		rs[path], rs[r] = true, true
	}
	for _, k := range slices.Sorted(maps.Keys(a.Statements)) {
		if !rs[k] {
			return a.badField("statements", "statements for %s: not one of its routes", k)
		}
		if a.Statements[k] < 0 {
			return a.badField("statements", "statements for %s: %d is negative", k, a.Statements[k])
		}
	}
	return nil
}

// validateRequestMix checks that an own app has routes or a request_mix
// (not both) and that the mix is sound; an error names the request's
// field, so that the plan's line is the field's.
func validateRequestMix(a PlanApp) error {
	switch {
	case a.RequestMix == nil && len(a.Routes) == 0:
		return ownAppFieldError(a.Name, "routes", "routes are missing: name the routes to drive, e.g. [/api/items, /api/items/1], or give a request_mix")
	case a.RequestMix == nil:
		return nil
	case len(a.Routes) > 0:
		return ownAppFieldError(a.Name, "request_mix", "give routes or a request_mix, not both")
	}
	i, field, err := workloads.CheckMixRequests(a.RequestMix)
	if err == nil {
		return nil
	}
	where := "request_mix"
	if i >= 0 {
		where = fmt.Sprintf("request_mix.%d.%s", i, field)
	}
	return ownAppFieldError(a.Name, where, err.Error())
}

// OwnAppMeta returns the metadata of a plan entry that names an image:
// its routes with their statements undeclared unless the entry declares
// them, the port and health path (defaults 8080 and /), and the
// environment (env_file first, env: wins).
func OwnAppMeta(a PlanApp) (*apps.Meta, error) {
	m := &apps.Meta{Name: a.Name, Kind: "app", Image: a.Image, Port: a.Port, Health: a.Health,
		DBInit: append([]string(nil), a.DBInit...), Env: map[string]string{}}
	if a.Compose != "" {
		ref := a.composeRef()
		p, err := CheckComposeRef(context.Background(), ref)
		if err != nil {
			return nil, err
		}
		svc := p.Services[ref.AppService]
		m.Compose, m.Image = &ref, ServiceImage(p, svc)
		if m.Port == 0 {
			m.Port = ComposeAppPort(svc)
		}
	}
	if m.Port == 0 {
		m.Port = OwnAppPort
	}
	if m.Health == "" {
		m.Health = OwnAppHealth
	}
	if a.EnvFile != "" {
		env, err := ReadEnvFile(a.EnvFile)
		if err != nil {
			return nil, err
		}
		for k, v := range env {
			m.Env[k] = v
		}
	}
	for k, v := range a.Env {
		m.Env[k] = v
	}
	// A route keeps its query: it is the request verify and trace send.
	seen := map[string]bool{}
	for _, r := range a.Routes {
		if seen[r] {
			continue
		}
		seen[r] = true
		path, _, _ := strings.Cut(r, "?")
		n, declared := a.Statements[r]
		if !declared {
			n, declared = a.Statements[path]
		}
		m.Routes = append(m.Routes, apps.Route{Path: r, Statements: n, Undeclared: !declared})
	}
	m.RequestMix = append([]workloads.MixRequest(nil), a.RequestMix...)
	return m, nil
}

// composeRef is the entry's compose file and services.
func (a PlanApp) composeRef() apps.ComposeRef {
	file := a.Compose
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	return apps.ComposeRef{File: file, AppService: a.AppService, DBService: a.DBService}
}

// AddOwnApps adds the metadata of the plan's image entries to all, so
// that they resolve like the apps of the tree. A name of the tree is not
// taken over.
func AddOwnApps(p *Plan, all map[string]*apps.Meta) error {
	for _, a := range p.Apps {
		if !a.Own() {
			continue
		}
		if IsTreeApp(all, a.Name) {
			return fmt.Errorf("app %s: the name is rttlab's own app: name the image's entry differently", a.Name)
		}
		m, err := OwnAppMeta(a)
		if err != nil {
			return fmt.Errorf("app %s: %w", a.Name, err)
		}
		all[a.Name] = m
	}
	return nil
}

// IsTreeApp reports whether name is one of rttlab's own apps in all (an
// app of the tree or a variant of one), which an own app may not take.
func IsTreeApp(all map[string]*apps.Meta, name string) bool {
	if m, ok := all[name]; ok {
		return m.Image == ""
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
// builds for the app.
func TargetImage(t apps.Target) string {
	if t.Image != "" {
		return t.Image
	}
	return engine.ImageRef(t.Meta.Name)
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
			return nil, fmt.Errorf("%s:%d: %q is not NAME=VALUE", path, n, truncate(line, 60))
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

// ApplyDBInit copies the init files into the database container and
// applies them in order as the app's role (so that the app owns what
// they create): psql -v ON_ERROR_STOP=1 for SQL, pg_restore for a
// custom-format dump. A failure is one line naming the host file, the
// line and PostgreSQL's error.
func ApplyDBInit(ctx context.Context, d engine.Containers, st *Stack, files []InitFile) error {
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
	if err := d.CopyToContainer(ctx, db.ID, "/tmp", &buf); err != nil {
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
		code, err := d.Exec(ctx, db.ID, engine.ExecSpec{Cmd: cmd, User: "postgres", Env: []string{"PGPASSWORD=" + st.DB.Password},
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
