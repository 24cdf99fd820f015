package stack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// SQL runs admin SQL in the stack's database container as the postgres
// superuser and returns the output rows (psql -At).
func (s *Stack) SQL(ctx context.Context, d runtime.Execer, query string) ([]string, error) {
	db := s.Role("db")
	if db == nil {
		return nil, fmt.Errorf("stack %s has no database", s.RunID)
	}
	var out, errb bytes.Buffer
	code, err := d.Exec(ctx, db.ID, runtime.ExecSpec{
		Cmd:    []string{"psql", "-X", "-q", "-At", "-U", s.DB.Super, "-v", "ON_ERROR_STOP=1", "-d", s.DB.Database, "-c", query},
		User:   "postgres",
		Stdout: &out,
		Stderr: &errb,
	})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("psql: exit %d: %s", code, strings.TrimSpace(errb.String()))
	}
	return lines(out.Bytes()), nil
}

// appStatementsSQL counts the app role's executed statements.
// rttlab's own calls (the reset, these counts) are left out: where the app
// connects as the superuser (a user's official PostgreSQL image), they
// run as the app's role too.
func appStatementsSQL(role string) string {
	return `SELECT coalesce(sum(s.calls),0) FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = ` + sqlLiteral(role) + notOwnCalls
}

func appStatementsDetailSQL(role string) string {
	return `SELECT s.calls || ' x ' || regexp_replace(left(s.query, 90), '\s+', ' ', 'g') FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = ` +
		sqlLiteral(role) + notOwnCalls + ` ORDER BY s.calls DESC, s.query LIMIT 8`
}

const notOwnCalls = ` AND s.query NOT LIKE '%pg_stat_statements%'`

// sqlLiteral quotes s as an SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// statementsUnavailable makes pg_stat_statements available in a user's
// database where it can (CREATE EXTENSION) and returns why it is not, or
// "" when it is.
func statementsUnavailable(ctx context.Context, d runtime.Execer, s *Stack) string {
	if _, err := s.SQL(ctx, d, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return fmt.Sprintf("pg_stat_statements cannot be created in database %s (%s)", s.DB.Database, engine.FirstLine(err.Error()))
	}
	if _, err := s.SQL(ctx, d, "SELECT count(*) FROM pg_stat_statements"); err != nil {
		return fmt.Sprintf("pg_stat_statements is not loaded: start the database service with `postgres -c shared_preload_libraries=pg_stat_statements` to count statements (%s)", engine.FirstLine(err.Error()))
	}
	return ""
}

// ResetStatements clears pg_stat_statements (nothing to clear where the
// database cannot count statements).
func (s *Stack) ResetStatements(ctx context.Context, d runtime.Execer) error {
	if s.NoStatements != "" {
		return nil
	}
	_, err := s.SQL(ctx, d, "SELECT pg_stat_statements_reset()")
	return err
}

// CountStatements returns the app role's executed statements since the last
// reset, or -1 where the database cannot count them (s.NoStatements).
func (s *Stack) CountStatements(ctx context.Context, d runtime.Execer) (int64, error) {
	if s.NoStatements != "" {
		return -1, nil
	}
	rows, err := s.SQL(ctx, d, appStatementsSQL(s.DB.User))
	if err != nil {
		return 0, err
	}
	if len(rows) != 1 {
		return 0, fmt.Errorf("count statements: unexpected output %q", rows)
	}
	return strconv.ParseInt(rows[0], 10, 64)
}

// StatementsByQuery lists the app role's statements since the last reset,
// most called first ("N x QUERY", the eight most called), leaving out
// rttlab's own calls.
func (s *Stack) StatementsByQuery(ctx context.Context, d runtime.Execer) ([]string, error) {
	return s.SQL(ctx, d, appStatementsDetailSQL(s.DB.User))
}

// lines splits command output into trimmed non-empty lines.
func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}
