package stack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

// get requests path of the stack's app n times and fails the test unless
// each answers 200.
func get(t *testing.T, st *Stack, path string, n int) {
	t.Helper()
	for range n {
		resp, err := http.Get(st.BaseURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
	}
}

// The statement counts are the app role's since the last reset: the fake
// app does three statements per /feed and five per /serial?n=5.
func TestCountAndResetStatements(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	st := started(t, l, StackOptions{Target: l.Target("go")})
	if err := st.ResetStatements(ctx, l); err != nil {
		t.Fatal(err)
	}
	get(t, st, "/feed", 2)
	get(t, st, "/serial?n=5", 1)
	if n, err := st.CountStatements(ctx, l); err != nil || n != 2*3+5 {
		t.Errorf("count %d %v, want 11", n, err)
	}
	rows, err := st.StatementsByQuery(ctx, l)
	if err != nil || !slices.Equal(rows, []string{"11 x SELECT id, title FROM articles WHERE account_id = $1"}) {
		t.Errorf("by query %q %v", rows, err)
	}
	if err := st.ResetStatements(ctx, l); err != nil {
		t.Fatal(err)
	}
	if n, err := st.CountStatements(ctx, l); err != nil || n != 0 {
		t.Errorf("count after the reset %d %v", n, err)
	}
}

// The counts filter on the stack's own app role: a database whose
// statements are another role's has none of the app's to count.
func TestCountStatementsFiltersOnTheAppRole(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	st := started(t, l, StackOptions{Target: l.Target("go")})
	l.DBRole = "someone_else"
	if n, err := st.CountStatements(ctx, l); err == nil || !strings.Contains(err.Error(), "psql: exit 1: ERROR:  unexpected query") {
		t.Errorf("count %d %v, want the lab to refuse a query for role rttlab", n, err)
	}
	l.Handle("psql", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stdout, "1\n2")
		return 0, nil
	})
	if _, err := st.CountStatements(ctx, l); err == nil || !strings.Contains(err.Error(), `unexpected output ["1" "2"]`) {
		t.Errorf("two rows: %v", err)
	}
}

// SQL runs as the superuser in the stack's database with psql -At and
// returns its rows; psql's failure is its exit code and stderr.
func TestStackSQL(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	st := started(t, l, StackOptions{Target: l.Target("go")})
	var seen *enginefake.Call
	l.Handle("psql", func(ctx context.Context, x *enginefake.Call) (int, error) {
		seen = x
		if x.Flag("-c") == "SELECT bad" {
			fmt.Fprintln(x.Stderr, `ERROR:  column "bad" does not exist`)
			return 1, nil
		}
		fmt.Fprintln(x.Stdout, "a|1\nb|2")
		return 0, nil
	})
	rows, err := st.SQL(ctx, l, "SELECT name, n FROM t")
	if err != nil || !slices.Equal(rows, []string{"a|1", "b|2"}) {
		t.Fatalf("rows %q %v", rows, err)
	}
	if seen.Container.Spec.Name != st.Role("db").Name || seen.User != "postgres" || seen.Flag("-U") != "postgres" || seen.Flag("-d") != "rttlab" ||
		!slices.Contains(seen.Cmd, "-At") || seen.Flag("-v") != "ON_ERROR_STOP=1" {
		t.Errorf("psql %q as %q in %s", seen.Cmd, seen.User, seen.Container.Spec.Name)
	}
	if _, err := st.SQL(ctx, l, "SELECT bad"); err == nil || err.Error() != `psql: exit 1: ERROR:  column "bad" does not exist` {
		t.Errorf("err = %v", err)
	}
	if _, err := (&Stack{RunID: "x"}).SQL(ctx, l, "SELECT 1"); err == nil || err.Error() != "stack x has no database" {
		t.Errorf("no database: %v", err)
	}
}

// Where pg_stat_statements is not loaded (a user's PostgreSQL), the
// reason names the fix, counts are -1 and a reset runs nothing.
func TestStatementsUnavailable(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	st := started(t, l, StackOptions{Target: l.Target("go")})
	if why := statementsUnavailable(ctx, l, st); why != "" {
		t.Errorf("loaded: %q", why)
	}
	l.NoPGSS = true
	st.NoStatements = statementsUnavailable(ctx, l, st)
	if !strings.HasPrefix(st.NoStatements, "pg_stat_statements is not loaded: start the database service with `postgres -c shared_preload_libraries=pg_stat_statements`") {
		t.Errorf("not loaded: %q", st.NoStatements)
	}
	execs := len(l.Execs())
	if n, err := st.CountStatements(ctx, l); err != nil || n != -1 {
		t.Errorf("count %d %v, want -1", n, err)
	}
	if err := st.ResetStatements(ctx, l); err != nil || len(l.Execs()) != execs {
		t.Errorf("reset %v after %d execs", err, len(l.Execs())-execs)
	}
	l.FailOn("Exec", "CREATE EXTENSION", 1, fmt.Errorf("permission denied to create extension\nHINT: superuser"))
	if why := statementsUnavailable(ctx, l, st); why != "pg_stat_statements cannot be created in database rttlab (permission denied to create extension)" {
		t.Errorf("cannot create: %q", why)
	}
}
