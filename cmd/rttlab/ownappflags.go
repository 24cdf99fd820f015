package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/rtt"
)

// ownAppOptions are the flags that describe a user's own app: an image
// (--app-image) or a service of a compose file (--compose), with the
// routes to drive and what the app needs to start. run, verify, trace,
// ci-smoke and up share them.
type ownAppOptions struct {
	appImage   string
	compose    string
	target     string // --target: an app where it runs on a cluster
	dbTarget   string
	container  string
	appService string
	dbService  string
	routes     []string
	port       int
	health     string
	dbInit     []string
	env        []string
	envFile    string
	name       string
	// renamed says how the own app was named when its derived name was
	// one of rttlab's apps ("" otherwise); the command prints it.
	renamed string

	// routesShared: --routes is also a flag of the command's own apps
	// (run, ci-smoke), not only of --app-image/--compose.
	routesShared bool

	app *rtt.PlanApp // the entry resolveApp built; nil for the tree's apps
}

// ownAppFlags are the flags that describe an app given by --app-image or
// --compose; any of them without one is refused.
var ownAppFlags = []string{"port", "health", "db-init", "env", "env-file", "app-service", "db-service", "name", "db-target", "container"}

// addFlags adds the own-app flags. routesUsage is the help of a --routes
// the command also uses for its own apps; "" makes --routes an own-app
// flag only.
func (o *ownAppOptions) addFlags(f *pflag.FlagSet, routesUsage string) {
	o.routesShared = routesUsage != ""
	if routesUsage == "" {
		routesUsage = "routes of the --app-image/--compose app to drive (comma list, e.g. /api/items,/api/items/1)"
	}
	f.StringSliceVar(&o.routes, "routes", nil, routesUsage)
	f.StringVar(&o.appImage, "app-image", "", "run your own app's image (never built or removed by rttlab); needs --routes")
	f.StringVar(&o.compose, "compose", "", "run your own compose file (images never built); needs --app-service, --db-service and --routes")
	f.StringVar(&o.appService, "app-service", "", "the --compose service that is the app driven")
	f.StringVar(&o.dbService, "db-service", "", "the --compose service that is the app's PostgreSQL")
	f.StringVar(&o.target, "target", "", "with --runtime kube: measure your app where it runs, deploy/NAME, statefulset/NAME or pod/NAME in --namespace (never edited, restarted or removed); needs --db-target and --routes")
	f.StringVar(&o.dbTarget, "db-target", "", "the --target app's PostgreSQL: deploy/NAME, statefulset/NAME or pod/NAME in --namespace")
	f.StringVar(&o.container, "container", "", "the --target app's container, when its pod has several")
	f.IntVar(&o.port, "port", stack.OwnAppPort, "port the own app listens on")
	f.StringVar(&o.health, "health", stack.OwnAppHealth, "path of the own app that answers 200 when it is ready")
	f.StringSliceVar(&o.dbInit, "db-init", nil, "SQL file, folder of .sql files (name order) or pg_dump (plain or custom) that initialises the database; repeatable")
	f.StringArrayVar(&o.env, "env", nil, "NAME=VALUE added to the own app's environment; repeatable")
	f.StringVar(&o.envFile, "env-file", "", "file of NAME=VALUE lines added to the own app's environment")
	f.StringVar(&o.name, "name", "", "the own app's name in results and messages (default: the image's or the app service's last name, with -image or -compose added when that is one of rttlab's apps)")
}

// given says whether the command runs an own app; it refuses the flags
// that do not go together and own-app flags without --app-image or
// --compose.
func (o *ownAppOptions) given(fl *pflag.FlagSet) (bool, error) {
	image, compose, target := fl.Changed("app-image"), fl.Changed("compose"), fl.Changed("target")
	if image && compose {
		return false, usagef("--app-image and --compose are exclusive: give the image, or the compose file that runs it")
	}
	if target && (image || compose) {
		return false, usagef("--target measures an app where it runs: drop --app-image and --compose with it")
	}
	if image || compose || target {
		return true, nil
	}
	names := ownAppFlags
	if !o.routesShared {
		names = append([]string{"routes"}, names...)
	}
	for _, f := range names {
		if fl.Changed(f) {
			return false, usagef("--%s describes an app given by --app-image or --compose: add one of them", f)
		}
	}
	return false, nil
}

// args is the Args of a command that takes APP (exactly one, or any
// number with many): none with --app-image or --compose.
func (o *ownAppOptions) args(many bool) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		own, err := o.given(cmd.Flags())
		switch {
		case err != nil:
			return err
		case own && len(args) > 0:
			return usagef("the app is the one of --app-image or --compose: drop the argument %q", args[0])
		case own, many:
			return nil
		}
		return cobra.ExactArgs(1)(cmd, args)
	}
}

// entry builds the plan entry of --app-image or --compose and its flags;
// every bad value is a usage error, found before anything starts.
func (o *ownAppOptions) entry(changed func(string) bool) (rtt.PlanApp, error) {
	a, what, err := o.source(changed)
	if err != nil {
		return a, err
	}
	if err := o.nameApp(&a, what, changed); err != nil {
		return a, err
	}
	a.Routes, a.Health, a.EnvFile = o.routes, o.health, o.envFile
	if changed("port") {
		// Else the default: 8080 for an image, the app service's first
		// ports:/expose: entry for a compose file.
		a.Port = o.port
	}
	if !changed("routes") || len(o.routes) == 0 {
		return a, usagef("%s: name the routes to drive with --routes, e.g. --routes /api/items,/api/items/1", what)
	}
	for _, r := range o.routes {
		if !strings.HasPrefix(r, "/") {
			return a, usagef("--routes: route %q must start with /", r)
		}
	}
	if changed("port") && (o.port <= 0 || o.port > 65535) {
		return a, usagef("--port %d is out of range 1-65535", o.port)
	}
	if changed("health") && !strings.HasPrefix(o.health, "/") {
		return a, usagef("--health %q must be a path starting with /", o.health)
	}
	if err := o.setEnv(&a); err != nil {
		return a, err
	}
	if err := o.setDBInit(&a); err != nil {
		return a, err
	}
	if err := rtt.ValidateOwnApp(a); err != nil {
		return a, usageError{Err: err}
	}
	return a, nil
}

// source starts the entry from --app-image or --compose (with its two
// services) and returns the flag that names it, for messages.
func (o *ownAppOptions) source(changed func(string) bool) (rtt.PlanApp, string, error) {
	if changed("target") {
		return o.running(changed)
	}
	for _, f := range []string{"db-target", "container"} {
		if changed(f) {
			return rtt.PlanApp{}, "--" + f, usagef("--%s goes with --target (an app where it runs on a cluster)", f)
		}
	}
	if !changed("compose") {
		what := "--app-image " + o.appImage
		if strings.TrimSpace(o.appImage) == "" {
			return rtt.PlanApp{}, what, usagef("--app-image: name an image, e.g. --app-image example/shop:1.4")
		}
		for _, f := range []string{"app-service", "db-service"} {
			if changed(f) {
				return rtt.PlanApp{}, what, usagef("--%s names a service of --compose: drop it with --app-image", f)
			}
		}
		return rtt.PlanApp{Name: stack.OwnAppName(o.appImage), Image: o.appImage}, what, nil
	}
	what := "--compose " + o.compose
	if strings.TrimSpace(o.compose) == "" {
		return rtt.PlanApp{}, what, usagef("--compose: name a compose file, e.g. --compose compose.yaml")
	}
	if o.appService == "" || o.dbService == "" {
		return rtt.PlanApp{}, what, usagef("%s: name the app's service with --app-service and its PostgreSQL's with --db-service", what)
	}
	if o.appService == o.dbService {
		return rtt.PlanApp{}, what, usagef("--app-service and --db-service both name %q: name the app's service and its database's", o.appService)
	}
	file, err := filepath.Abs(o.compose)
	if err != nil {
		file = o.compose
	}
	if st, err := os.Stat(file); err != nil || st.IsDir() {
		return rtt.PlanApp{}, what, usagef("%s: no such file", what)
	}
	return rtt.PlanApp{Name: stack.OwnAppName(o.appService), Compose: file,
		AppService: o.appService, DBService: o.dbService}, what, nil
}

// running starts the entry from --target: an app where it runs on the
// cluster of --runtime kube, with its database (--db-target).
func (o *ownAppOptions) running(changed func(string) bool) (rtt.PlanApp, string, error) {
	what := "--target " + o.target
	if labRuntime.name != runtimeKube {
		return rtt.PlanApp{}, what, usagef("--target measures an app where it runs on a cluster: add --runtime kube (on Docker, run its image with --app-image or its compose file with --compose)")
	}
	if o.dbTarget == "" {
		return rtt.PlanApp{}, what, usagef("%s: name its PostgreSQL with --db-target, e.g. --db-target statefulset/postgres", what)
	}
	for _, f := range []string{"app-service", "db-service"} {
		if changed(f) {
			return rtt.PlanApp{}, what, usagef("--%s names a service of --compose: drop it with --target", f)
		}
	}
	_, name, _ := strings.Cut(o.target, "/")
	return rtt.PlanApp{Name: stack.OwnAppName(name), Target: o.target, DBTarget: o.dbTarget,
		Namespace: labRuntime.namespace, Container: o.container}, what, nil
}

// setEnv adds --env to the entry and checks --env-file.
func (o *ownAppOptions) setEnv(a *rtt.PlanApp) error {
	for _, kv := range o.env {
		k, v, err := stack.ParseEnvFlag(kv)
		if err != nil {
			return usageError{Err: err}
		}
		if a.Env == nil {
			a.Env = map[string]string{}
		}
		a.Env[k] = v
	}
	if o.envFile == "" {
		return nil
	}
	if abs, err := filepath.Abs(o.envFile); err == nil {
		a.EnvFile = abs
	}
	if _, err := stack.ReadEnvFile(a.EnvFile); err != nil {
		return usagef("--env-file: %v", err)
	}
	return nil
}

// setDBInit adds the --db-init paths, absolute, and checks what they hold.
func (o *ownAppOptions) setDBInit(a *rtt.PlanApp) error {
	// ExpandDBInit refuses a missing path as given, and what a file or
	// folder holds.
	if _, err := stack.ExpandDBInit(o.dbInit); err != nil {
		return usageError{Err: err}
	}
	for _, p := range o.dbInit {
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		a.DBInit = append(a.DBInit, abs)
	}
	return nil
}

// nameApp names the own app: --name when given (refused when it is one of
// rttlab's apps), else the name derived from the image or the app
// service, with -image or -compose added when that one is rttlab's; the
// rename is kept in o.renamed for the command to say.
func (o *ownAppOptions) nameApp(a *rtt.PlanApp, what string, changed func(string) bool) error {
	all, _, _, err := appsTree()
	if err != nil {
		return err
	}
	taken := func(name string) bool { return stack.IsTreeApp(all, name) }
	if changed("name") {
		if !apps.ValidName(o.name) {
			return usagef("--name %q: use lower-case letters, digits and -, starting with a letter, at most 31 characters", o.name)
		}
		if taken(o.name) {
			return usagef("--name %s is one of rttlab's apps: give another", o.name)
		}
		a.Name = o.name
		return nil
	}
	if !taken(a.Name) {
		return nil
	}
	suffix := "-image"
	if a.Compose != "" {
		suffix = "-compose"
	}
	name := strings.TrimRight(a.Name[:min(len(a.Name), 31-len(suffix))], "-") + suffix
	o.renamed = fmt.Sprintf("%s: named %s here, since %s is one of rttlab's apps (--name sets another)", what, name, a.Name)
	a.Name = name
	return nil
}

// ownTarget resolves an own app's entry the way run does: added to the
// tree's apps (a name of rttlab's own apps is refused), then by name.
func ownTarget(a rtt.PlanApp) (apps.Target, error) {
	all, _, _, err := appsTree()
	if err != nil {
		return apps.Target{}, err
	}
	if err := rtt.AddOwnApps(&rtt.Plan{Apps: []rtt.PlanApp{a}}, all); err != nil {
		return apps.Target{}, usageError{Err: err}
	}
	t, err := apps.Resolve(all, a.Name)
	if err != nil {
		return apps.Target{}, usageError{Err: err}
	}
	return t, nil
}

// resolveApp returns the app a command runs: the own app of the flags
// (its plan entry kept in o.app), else the tree's app args[0]. It is the
// PreRunE step of trace, ci-smoke and up, and of verify with an own app.
func (o *ownAppOptions) resolveApp(w io.Writer, fl *pflag.FlagSet, args []string) (apps.Target, error) {
	own, err := o.given(fl)
	if err != nil {
		return apps.Target{}, err
	}
	if !own {
		return loadTarget(args[0])
	}
	a, err := o.entry(fl.Changed)
	if err != nil {
		return apps.Target{}, err
	}
	if o.renamed != "" {
		fmt.Fprintln(w, o.renamed)
	}
	o.app = &a
	return ownTarget(a)
}
