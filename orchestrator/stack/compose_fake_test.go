package stack

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

// Own apps from a user's compose file, started on the fake lab without
// agents.

// composeTarget writes body as a user's compose file whose app service is
// web and database service pg, adds every service's image to the lab and
// returns the target rttlab makes of the file: its metadata is what an
// own compose entry's is (the app service's image, the compose reference),
// with the fake app's port, /health and WORKERS=4 as the entry's env.
func composeTarget(t *testing.T, l *fakelab.Lab, body string) apps.Target {
	t.Helper()
	ref := apps.ComposeRef{File: fakelab.WriteCompose(t, body), AppService: "web", DBService: "pg"}
	p, err := CheckComposeRef(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Services {
		l.AddImage(ServiceImage(p, s), nil)
	}
	m := &apps.Meta{Name: "web", Kind: "app", Image: ServiceImage(p, p.Services["web"]), Port: l.Apps["go"].Port, Health: "/health",
		Compose: &ref, Env: map[string]string{"WORKERS": "4"}}
	l.IPByService["web"] = "127.0.0.1"
	l.DBRole = "shop"
	return apps.Target{Name: "web", Meta: m, Env: m.Env, Image: m.Image}
}

// Every service of the file runs, in dependency order, on the run's
// network; the app and database services are the shaped pair, the
// others run beside them; the database's credentials are its own.
func TestStartStackOwnComposeMembers(t *testing.T) {
	l := fakelab.New(t)
	st := started(t, l, StackOptions{Target: composeTarget(t, l, fakelab.ShopCompose)})
	var got []string
	for _, m := range st.Members {
		got = append(got, m.Service+" "+m.Role)
		if m.Shaped != (m.Role != "service") || m.Name != "rttlab-"+st.RunID+"-"+m.Service {
			t.Errorf("member %+v", m)
		}
	}
	if want := []string{"cache service", "pg db", "web app"}; !slices.Equal(got, want) {
		t.Errorf("members %q, want %q", got, want)
	}
	if st.DB != (DBCredentials{User: "shop", Password: "s3cret", Database: "shopdb", Super: "shop"}) || st.NoStatements != "" {
		t.Errorf("credentials %+v, no statements %q", st.DB, st.NoStatements)
	}
	for svc, c := range specsByService(l) {
		if c.Labels[engine.LabelRun] != st.RunID || c.Network != st.Network || !slices.Equal(c.Aliases, []string{svc}) ||
			(c.Labels[engine.LabelApp] == "web") != (svc == "web") {
			t.Errorf("%s: labels %v, network %s, aliases %v", svc, c.Labels, c.Network, c.Aliases)
		}
	}
	if st.AppAddr != st.Role("app").IP+":"+l.HostPort || st.Role("app").Service != "web" {
		t.Errorf("app address %q", st.AppAddr)
	}
}

// The services' containers are the file's: its image (or the one compose
// builds), its environment (the entry's env wins, nothing of rttlab's
// feed stack is added), bind mounts, fresh anonymous volumes and tmpfs.
func TestStartStackOwnComposeSpecs(t *testing.T) {
	l := fakelab.New(t)
	started(t, l, StackOptions{Target: composeTarget(t, l, fakelab.ShopCompose)})
	specs := specsByService(l)
	web, pg, cache := specs["web"], specs["pg"], specs["cache"]
	if want := []string{"DATABASE_URL=postgres://shop:s3cret@pg:5432/shopdb", "WORKERS=4"}; !slices.Equal(web.Env, want) {
		t.Errorf("web env %q, want %q", web.Env, want)
	}
	if web.Image != "shop_app-web" || len(web.Binds) != 1 || !strings.HasSuffix(web.Binds[0], "/Shop_App/config:/etc/shop:ro") {
		t.Errorf("web image %s binds %v", web.Image, web.Binds)
	}
	if pg.Image != "example/postgres:17" || !slices.Equal(pg.Volumes, []string{"/var/lib/postgresql/data"}) || len(pg.Binds) != 0 {
		t.Errorf("pg image %s volumes %v binds %v", pg.Image, pg.Volumes, pg.Binds)
	}
	if want := []string{"POSTGRES_DB=shopdb", "POSTGRES_PASSWORD=s3cret", "POSTGRES_USER=shop"}; !slices.Equal(pg.Env, want) {
		t.Errorf("pg env %q", pg.Env)
	}
	if cache.Image != "example/cache:7" || !slices.Equal(cache.Tmpfs, []string{"/data"}) || len(cache.Env) != 0 {
		t.Errorf("cache image %s tmpfs %v env %v", cache.Image, cache.Tmpfs, cache.Env)
	}
}

// The app's statements are counted as the file's database role; where the
// user's PostgreSQL lacks pg_stat_statements the stack says so and counts
// nothing.
func TestStartStackOwnComposeStatements(t *testing.T) {
	ctx := context.Background()
	for _, noPGSS := range []bool{false, true} {
		l := fakelab.New(t)
		l.NoPGSS = noPGSS
		st := started(t, l, StackOptions{Target: composeTarget(t, l, fakelab.ShopCompose)})
		get(t, st, "/feed", 2)
		n, err := st.CountStatements(ctx, l)
		if want := map[bool]int64{false: 6, true: -1}[noPGSS]; err != nil || n != want {
			t.Errorf("no pg_stat_statements %v: count %d %v, want %d", noPGSS, n, err, want)
		}
		if noPGSS != strings.Contains(st.NoStatements, "shared_preload_libraries") {
			t.Errorf("no pg_stat_statements %v: %q", noPGSS, st.NoStatements)
		}
		if err := st.Remove(ctx, engine.NewLab(l, "")); err != nil {
			t.Fatal(err)
		}
		l.RequireEmpty(t)
	}
}

// A file rttlab cannot run fails before anything is created.
func TestStartStackOwnComposeRefused(t *testing.T) {
	l := fakelab.New(t)
	nopw := composeTarget(t, l, strings.Replace(fakelab.ShopCompose, "      POSTGRES_PASSWORD: ${SHOP_DB_PASSWORD:-s3cret}\n", "", 1))
	_, err := StartStack(context.Background(), engine.NewLab(l, ""), StackOptions{Target: nopw})
	if want := "compose file " + nopw.Meta.Compose.File + ": database service pg: its environment sets neither POSTGRES_PASSWORD"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	gone := composeTarget(t, l, fakelab.ShopCompose)
	gone.Meta.Compose.DBService = "postgres"
	if _, err := StartStack(context.Background(), engine.NewLab(l, ""), StackOptions{Target: gone}); err == nil || !strings.Contains(err.Error(), `has no service "postgres"`) {
		t.Errorf("unknown database service: %v", err)
	}
	if n := l.CountCalls("CreateNetwork") + l.CountCalls("CreateContainer"); n != 0 {
		t.Errorf("%d networks and containers created", n)
	}
}
