package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// NoStatementsRunning is why a running database counts no statements:
// counting would create pg_stat_statements in it and reset it, and a
// database measured where it runs is left as it is.
const NoStatementsRunning = "the database is measured where it runs and left as it is: rttlab creates and resets nothing in it"

// adoptStack makes st of a user's app and database where they already
// run (o.Target.Meta.Running), found by the runtime (runtime.Adopter):
// the lab starts, edits and removes neither. The database's credentials
// come from its environment, else from the app's; the app is ready when
// its health path answers.
func adoptStack(ctx context.Context, d runtime.Runtime, st *Stack, o StackOptions) error {
	r := o.Target.Meta.Running
	ad, ok := d.(runtime.Adopter)
	if !ok {
		return fmt.Errorf("app %s: an app where it runs (target %s) is measured on a cluster: use --runtime kube", o.Target.Name, r.App)
	}
	labels := RunLabels(st.RunID, nil)
	db, err := ad.Adopt(ctx, runtime.AdoptSpec{Target: r.DB, Namespace: r.Namespace, Alias: "db", Labels: labels})
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	app, err := ad.Adopt(ctx, runtime.AdoptSpec{Target: r.App, Namespace: r.Namespace, Container: r.Container, Alias: "app", Labels: labels})
	if err != nil {
		return fmt.Errorf("app: %w", err)
	}
	if db.Member.ID == app.Member.ID || db.NetNS == app.NetNS {
		return fmt.Errorf("app %s and database %s share a pod: there is no wire between them to shape", r.App, r.DB)
	}
	add := func(role string, a runtime.Adopted) *Member {
		m := &Member{Service: role, Role: role, Shaped: true, ID: a.ID, Name: a.Name, IP: a.Addr, NetNS: a.NetNS, Node: a.Node,
			Adopted: true, Instance: a.Instance}
		st.Members = append(st.Members, m)
		return m
	}
	add("db", db)
	am := add("app", app)
	if st.DB, err = RunningDBCredentials(db.Env, app.Env); err != nil {
		return fmt.Errorf("database %s: %w", r.DB, err)
	}
	st.NoStatements = NoStatementsRunning
	st.AppAddr = net.JoinHostPort(app.Addr, fmt.Sprint(o.Target.Meta.Port))
	return WaitApp(ctx, d, st, am, o.ReadyTimeout)
}

// RunningDBCredentials reads a running database's credentials: from its
// own environment as the official image takes them (ComposeDBCredentials),
// else from its app's, libpq's PGUSER, PGPASSWORD and PGDATABASE or a
// DATABASE_URL.
func RunningDBCredentials(dbEnv, appEnv []string) (DBCredentials, error) {
	c, err := ComposeDBCredentials(EnvMap(dbEnv))
	if err == nil {
		return c, nil
	}
	app := EnvMap(appEnv)
	user, password, database := app["PGUSER"], app["PGPASSWORD"], app["PGDATABASE"]
	if u, perr := url.Parse(app["DATABASE_URL"]); perr == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && u.User != nil {
		if pw, _ := u.User.Password(); u.User.Username() != "" && pw != "" {
			user, password, database = u.User.Username(), pw, strings.TrimPrefix(u.Path, "/")
		}
	}
	if user != "" && password != "" {
		if database == "" {
			database = user
		}
		return DBCredentials{User: user, Password: password, Database: database, Super: user}, nil
	}
	return DBCredentials{}, errors.New("no credentials: neither its environment (POSTGRES_PASSWORD) nor the app's (PGUSER and PGPASSWORD, or DATABASE_URL) gives them")
}

// EnvMap reads KEY=value entries (a member's environment); a later one
// wins.
func EnvMap(env []string) map[string]string {
	out := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}
