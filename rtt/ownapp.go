package rtt

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/planfile"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/workloads"
)

// A user's own app is a plan entry with image: instead of an app of this
// tree: rttlab runs the image as it is (never builds, retags or removes
// it) against its PostgreSQL, initialised by the user's SQL files or
// pg_dump, and drives the routes the entry names.

// ownAppFieldError is a bad own-app field of the plan entry of app: a
// planfile.FieldError whose path names the entry by its name, so that a
// plan read from a file gets the field's line.
func ownAppFieldError(app, field, msg string) error {
	return &planfile.FieldError{Path: "apps[name=" + app + "]." + field, Err: fmt.Errorf("app %s: %s", app, msg)}
}

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
		{"request_mix", a.RequestMix != nil}, {"db_target", a.DBTarget != ""}, {"namespace", a.Namespace != ""}, {"container", a.Container != ""}} {
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
	if a.Target != "" {
		return validateRunning(a)
	}
	if a.DBTarget != "" || a.Namespace != "" || a.Container != "" {
		return a.badField("db_target", "db_target, namespace and container go with target: (an app where it runs on a cluster)")
	}
	if a.Compose != "" {
		// A file that does not load is the compose: line's error; only then
		// are the services checked against it.
		p, err := stack.LoadOwnCompose(context.Background(), a.Compose)
		if err != nil {
			return a.badField("compose", "%v", err)
		}
		if field, err := stack.CheckComposeServices(p, a.composeRef()); err != nil {
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

// validateRunning checks an app given by target: (where it runs on a
// cluster): nothing rttlab would start for it, its database named, both
// as kind/name.
func validateRunning(a PlanApp) error {
	for _, f := range []struct {
		name string
		set  bool
	}{{"image", a.Image != ""}, {"compose", a.Compose != ""}, {"db_init", len(a.DBInit) > 0}, {"env", len(a.Env) > 0}, {"env_file", a.EnvFile != ""}} {
		if f.set {
			return a.badField(f.name, "%s does not go with target: rttlab measures the app where it runs, as it runs, and starts nothing of it", f.name)
		}
	}
	if a.DBTarget == "" {
		return a.badField("db_target", "target: needs db_target: (--db-target), its PostgreSQL as pod/NAME, deploy/NAME or statefulset/NAME")
	}
	for _, f := range []struct{ name, v string }{{"target", a.Target}, {"db_target", a.DBTarget}} {
		kind, name, ok := strings.Cut(f.v, "/")
		switch strings.ToLower(kind) {
		case "pod", "deploy", "deployment", "sts", "statefulset":
		default:
			ok = false
		}
		if !ok || name == "" || strings.ContainsAny(name, "/ \t") {
			return a.badField(f.name, "%s %q: name it pod/NAME, deploy/NAME or statefulset/NAME", f.name, f.v)
		}
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
		if !stack.ValidEnvKey(k) {
			return a.badField("env", "env %q is not a variable name", k)
		}
	}
	if a.EnvFile != "" {
		if _, err := stack.ReadEnvFile(a.EnvFile); err != nil {
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
		p, err := stack.CheckComposeRef(context.Background(), ref)
		if err != nil {
			return nil, err
		}
		svc := p.Services[ref.AppService]
		m.Compose, m.Image = &ref, stack.ServiceImage(p, svc)
		if m.Port == 0 {
			m.Port = stack.ComposeAppPort(svc)
		}
	}
	if a.Target != "" {
		m.Running = &apps.RunningRef{Namespace: a.Namespace, App: a.Target, DB: a.DBTarget, Container: a.Container}
	}
	if m.Port == 0 {
		m.Port = stack.OwnAppPort
	}
	if m.Health == "" {
		m.Health = stack.OwnAppHealth
	}
	if a.EnvFile != "" {
		env, err := stack.ReadEnvFile(a.EnvFile)
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
		if stack.IsTreeApp(all, a.Name) {
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
