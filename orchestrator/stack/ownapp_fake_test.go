package stack

import (
	"context"
	"errors"
	"fmt"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

// Own images, run as they are against rttlab's PostgreSQL, on the fake
// lab without agents.

// ownTarget is a user's image example/shop:1.4 listening on the fake
// app's port, with LOG_LEVEL=warn and the given database init files.
func ownTarget(l *fakelab.Lab, dbInit ...string) apps.Target {
	m := &apps.Meta{Name: "shop", Kind: "app", Image: "example/shop:1.4", Port: l.Apps["go"].Port, Health: "/health",
		DBInit: dbInit, Env: map[string]string{"LOG_LEVEL": "warn"}}
	return apps.Target{Name: "shop", Meta: m, Env: m.Env, Image: m.Image}
}

// initApplied records the init files the lab's database applies, as
// "TOOL FILE USER DATABASE PGPASSWORD", in order.
func initApplied(l *fakelab.Lab) *[]string {
	var applied []string
	record := func(ctx context.Context, x *enginefake.Call) (int, error) {
		applied = append(applied, fmt.Sprintf("%s %s %s %s %s", x.Cmd[0], x.Cmd[len(x.Cmd)-1], x.Flag("-U"), x.Flag("-d"), strings.Join(x.Env, ",")))
		return 0, nil
	}
	l.Handle("psql -X -q -v ON_ERROR_STOP=1", record)
	l.Handle("pg_restore", record)
	return &applied
}

// The image runs as it is with the app's environment; its init files are
// copied into the database and applied in order, as the app's role,
// before the app starts.
func TestStartStackOwnImageWithDBInit(t *testing.T) {
	l := fakelab.New(t)
	dir := t.TempDir()
	schema := fakelab.WriteFile(t, filepath.Join(dir, "schema.sql"), "CREATE TABLE items (id int);")
	fakelab.WriteFile(t, filepath.Join(dir, "seed", "20-more.sql"), "INSERT INTO items VALUES (2);")
	fakelab.WriteFile(t, filepath.Join(dir, "seed", "10-rows.sql"), "INSERT INTO items VALUES (1);")
	dump := fakelab.WriteFile(t, filepath.Join(dir, "data.dump"), "PGDMP-archive")
	l.AddImage("example/shop:1.4", nil)
	applied := initApplied(l)
	st := started(t, l, StackOptions{RunID: "r1", Target: ownTarget(l, schema, filepath.Join(dir, "seed"), dump)})
	env := "PGPASSWORD=" + st.DB.Password
	want := []string{"psql " + initDir + "/001-schema.sql rttlab rttlab " + env, "psql " + initDir + "/002-10-rows.sql rttlab rttlab " + env,
		"psql " + initDir + "/003-20-more.sql rttlab rttlab " + env, "pg_restore " + initDir + "/004-data.dump rttlab rttlab " + env}
	if !slices.Equal(*applied, want) {
		t.Errorf("applied %q\nwant %q", *applied, want)
	}
	copied := l.Copied["rttlab-r1-db"]
	if _, folder := copied[initDir]; len(copied) != 5 || !folder || string(copied[initDir+"/003-20-more.sql"]) != "INSERT INTO items VALUES (2);" || string(copied[initDir+"/004-data.dump"]) != "PGDMP-archive" {
		t.Errorf("copied %q", copied)
	}
	calls := l.Calls()
	lastInit := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "Exec pg_restore ") })
	if app := slices.Index(calls, "CreateContainer rttlab-r1-app"); app < lastInit {
		t.Errorf("the app was created (call %d) before the last init file was applied (call %d)", app, lastInit)
	}
	app := specsByService(l)["app"]
	if app.Image != "example/shop:1.4" || !slices.Contains(app.Env, "LOG_LEVEL=warn") || !slices.Contains(app.Env, fmt.Sprintf("PORT=%d", l.Apps["go"].Port)) {
		t.Errorf("app %s env %v", app.Image, app.Env)
	}
}

// CheckOwnImage passes on an engine error that is not the image's
// absence; a stack of an image the engine lacks does not start and
// leaves nothing.
func TestOwnImageMissing(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	boom := errors.New("inspect: engine is shutting down")
	l.FailOn("ImageID", "example/shop:1.4", 1, boom)
	if _, err := CheckOwnImage(ctx, l, "example/shop:1.4"); !errors.Is(err, boom) || strings.Contains(err.Error(), "not present locally") {
		t.Errorf("engine error: %v", err)
	}
	_, err := StartStack(ctx, engine.NewLab(l, ""), StackOptions{RunID: "r1", Target: ownTarget(l)})
	if err == nil || !strings.Contains(err.Error(), "create rttlab-r1-app") || !strings.Contains(err.Error(), "example/shop:1.4") {
		t.Errorf("start: %v", err)
	}
	l.RequireEmpty(t)
}

// An init file that vanished since the plan was read fails the start
// before anything is copied.
func TestStartStackDBInitGone(t *testing.T) {
	l := fakelab.New(t)
	l.AddImage("example/shop:1.4", nil)
	gone := filepath.Join(t.TempDir(), "schema.sql")
	_, err := StartStack(context.Background(), engine.NewLab(l, ""), StackOptions{Target: ownTarget(l, gone)})
	if err == nil || err.Error() != "--db-init "+gone+": no such file or folder" {
		t.Errorf("err = %v", err)
	}
	if n := l.CountCalls("CopyToContainer"); n != 0 {
		t.Errorf("%d copies", n)
	}
	l.RequireEmpty(t)
}

// ApplyDBInit's failures are one line naming the host file: the copy,
// the exec, and a tool that exits with or without psql's error line.
func TestApplyDBInitFailures(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	st := started(t, l, StackOptions{Target: l.Target("go")})
	dir := t.TempDir()
	sql := []InitFile{{fakelab.WriteFile(t, filepath.Join(dir, "schema.sql"), "CREATE TABLE t (x int);"), "sql"}}
	dump := []InitFile{{fakelab.WriteFile(t, filepath.Join(dir, "data.dump"), "PGDMP"), "custom"}}
	l.FailOn("CopyToContainer", "", 1, errors.New("copy: no space left on device"))
	l.FailOn("Exec", "pg_restore", 1, errors.New("exec: connection reset"))
	l.Handle("psql -X -q -v ON_ERROR_STOP=1", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintf(x.Stderr, "psql:%s:1: ERROR:  relation \"t\" already exists\n", x.Flag("-f"))
		return 3, nil
	})
	l.Handle("pg_restore", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stderr, "pg_restore: warning: archive from a newer version\npg_restore: error: could not read from input file: end of file")
		return 1, nil
	})
	for _, c := range []struct {
		files []InitFile
		want  string
	}{
		{sql, "--db-init: copy: no space left on device"},
		{dump, "--db-init " + dump[0].Path + ": exec: connection reset"},
		{sql, "--db-init " + sql[0].Path + `:1: ERROR: relation "t" already exists`},
		{dump, "--db-init " + dump[0].Path + ": pg_restore exited 1: pg_restore: error: could not read from input file: end of file"},
		{[]InitFile{{filepath.Join(dir, "gone.sql"), "sql"}}, "db_init file " + filepath.Join(dir, "gone.sql") + ": no such file"},
	} {
		if err := ApplyDBInit(ctx, engine.NewLab(l, ""), st, c.files); err == nil || !strings.HasSuffix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line ending %q", c.files[0].Path, err, c.want)
		}
	}
	copies := l.CountCalls("CopyToContainer")
	if err := ApplyDBInit(ctx, engine.NewLab(l, ""), st, nil); err != nil || l.CountCalls("CopyToContainer") != copies {
		t.Errorf("no files: %v, %d copies", err, l.CountCalls("CopyToContainer")-copies)
	}
	if err := ApplyDBInit(ctx, engine.NewLab(l, ""), &Stack{RunID: "x"}, sql); err == nil || err.Error() != "stack x has no database" {
		t.Errorf("no database: %v", err)
	}
}
