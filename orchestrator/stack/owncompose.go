package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/consts"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/capped"
	"github.com/rttlab/rttlab/internal/conc"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// An own app's compose file runs as the file says, with these differences:
// every service joins the run's private network (aliased by its service
// name) instead of the file's networks; named volumes become anonymous
// ones, removed with their container; published ports are not published
// (rttlab publishes the app's port on 127.0.0.1 when it needs to); and no
// image is ever built or pulled. rttlab labels everything, adds its agents
// and client, and shapes between the app service and the database service.

// LoadOwnCompose loads an own app's compose file the way `docker compose`
// would: paths relative to its folder, variables from the environment
// and the folder's .env.
func LoadOwnCompose(ctx context.Context, file string) (*types.Project, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("compose file %s: %w", file, err)
	}
	if _, err := capped.ReadFile(file, "compose file", 1<<20); err != nil {
		return nil, err
	}
	if err := checkDotEnv(filepath.Dir(abs)); err != nil {
		return nil, err
	}
	// The project name follows docker compose's precedence (the file's
	// name:, COMPOSE_PROJECT_NAME, the folder), so that the image compose
	// built for a service without image: is found.
	opts, err := cli.NewProjectOptions([]string{abs},
		cli.WithWorkingDirectory(filepath.Dir(abs)), cli.WithOsEnv, cli.WithEnvFiles(), cli.WithDotEnv,
		cli.WithResolvedPaths(true))
	if err != nil {
		return nil, fmt.Errorf("compose file %s: %w", file, err)
	}
	p, err := opts.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("compose file %s: %w", file, firstLineErr(err))
	}
	return p, nil
}

// checkDotEnv refuses the .env of dir, which the loader reads (unless
// COMPOSE_DISABLE_ENV_FILE says not to, as for docker compose), unless it
// is a capped regular file like every file a user names.
func checkDotEnv(dir string) error {
	dotEnv := filepath.Join(dir, ".env")
	off, _ := strconv.ParseBool(os.Getenv(consts.ComposeDisableDefaultEnvFile))
	if _, err := os.Lstat(dotEnv); err != nil || off {
		return nil
	}
	_, err := capped.ReadFile(dotEnv, "compose .env file", 1<<20)
	return err
}

func firstLineErr(err error) error {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return errors.New(s[:i])
	}
	return err
}

// ServiceImage is the image a compose service runs: its image:, or the
// one `docker compose build` tags for a service with only build:
// (<project>-<service>).
func ServiceImage(p *types.Project, s types.ServiceConfig) string {
	if s.Image != "" {
		return s.Image
	}
	return p.Name + "-" + s.Name
}

// CheckComposeRef checks that the file loads and names two different
// services, the app and the database, that no service depends on what
// rttlab does not run, and that no service shares another's network.
func CheckComposeRef(ctx context.Context, ref apps.ComposeRef) (*types.Project, error) {
	p, err := LoadOwnCompose(ctx, ref.File)
	if err != nil {
		return nil, err
	}
	if _, err := CheckComposeServices(p, ref); err != nil {
		return nil, err
	}
	return p, nil
}

// CheckComposeServices checks a loaded file against ref; field is the
// plan field at fault: app_service, db_service or compose.
func CheckComposeServices(p *types.Project, ref apps.ComposeRef) (field string, err error) {
	names := p.ServiceNames()
	sort.Strings(names)
	for _, s := range []struct{ flag, name string }{{"app_service", ref.AppService}, {"db_service", ref.DBService}} {
		if s.name == "" {
			return s.flag, fmt.Errorf("compose file %s: %s is missing: name one of its services (%s)", ref.File, s.flag, strings.Join(names, ", "))
		}
		if _, err := p.GetService(s.name); err != nil {
			return s.flag, fmt.Errorf("compose file %s has no service %q: its services are %s", ref.File, s.name, strings.Join(names, ", "))
		}
	}
	if ref.AppService == ref.DBService {
		return "compose", fmt.Errorf("compose file %s: the app service and the database service are both %q: name two different services", ref.File, ref.AppService)
	}
	for _, n := range names {
		s := p.Services[n]
		if s.NetworkMode != "" {
			return "compose", fmt.Errorf("compose file %s: service %s sets network_mode %q: rttlab puts every service on its own private network; remove network_mode", ref.File, n, s.NetworkMode)
		}
		for dep := range s.DependsOn {
			if _, ok := p.Services[dep]; !ok {
				return "compose", fmt.Errorf("compose file %s: service %s depends on %s, which the file does not define (or a profile leaves out)", ref.File, n, dep)
			}
		}
	}
	return "", nil
}

// ComposeAppPort is the port the app service listens on when the entry
// does not say: the target of its first ports: or expose: entry, else
// OwnAppPort.
func ComposeAppPort(s types.ServiceConfig) int {
	for _, pt := range s.Ports {
		if pt.Target > 0 {
			return int(pt.Target)
		}
	}
	for _, e := range s.Expose {
		port, _, _ := strings.Cut(e, "/")
		if n, err := strconv.Atoi(port); err == nil && n > 0 {
			return n
		}
	}
	return OwnAppPort
}

// CheckComposeImages returns one line naming the first service whose
// image the engine lacks; rttlab never builds or pulls a user's images.
func CheckComposeImages(ctx context.Context, d engine.ImageStore, ref apps.ComposeRef) error {
	p, err := LoadOwnCompose(ctx, ref.File)
	if err != nil {
		return err
	}
	names := p.ServiceNames()
	sort.Strings(names)
	for _, n := range names {
		s := p.Services[n]
		img := ServiceImage(p, s)
		if _, err := d.ImageID(ctx, img); errors.Is(err, engine.ErrNotFound) {
			fix := "build or pull it first"
			if s.Build != nil {
				fix = fmt.Sprintf("build it first: docker compose -f %s build %s", ref.File, n)
			}
			return fmt.Errorf("compose file %s: service %s's image %s is not present locally: %s", ref.File, n, img, fix)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// DBCredentials are how rttlab reaches the stack's PostgreSQL: the app's
// role and database (what the statement counts and SELECT 1 probes use)
// and the superuser its admin SQL runs as over the local socket.
type DBCredentials struct {
	User, Password, Database, Super string
}

// RttlabDB are the credentials of rttlab's own PostgreSQL image.
func RttlabDB(password string) DBCredentials {
	return DBCredentials{User: "rttlab", Password: password, Database: "rttlab", Super: "postgres"}
}

// ComposeDBCredentials reads the database service's environment: rttlab's
// PostgreSQL image (RTTLAB_DB_PASSWORD) or the official image's
// POSTGRES_USER (default postgres, also the superuser), POSTGRES_PASSWORD
// and POSTGRES_DB (default: the user).
func ComposeDBCredentials(env map[string]string) (DBCredentials, error) {
	if pw, ok := env["RTTLAB_DB_PASSWORD"]; ok {
		return RttlabDB(pw), nil
	}
	c := DBCredentials{User: env["POSTGRES_USER"], Password: env["POSTGRES_PASSWORD"], Database: env["POSTGRES_DB"]}
	if c.User == "" {
		c.User = "postgres"
	}
	if c.Database == "" {
		c.Database = c.User
	}
	c.Super = c.User
	if c.Password == "" {
		return c, errors.New("its environment sets neither POSTGRES_PASSWORD nor RTTLAB_DB_PASSWORD: rttlab reads the database's credentials from them")
	}
	return c, nil
}

// composeServiceSpec is the container of one service of a user's file.
func composeServiceSpec(s types.ServiceConfig, image string) (runtime.MemberSpec, error) {
	spec := runtime.MemberSpec{Image: image, Cmd: s.Command, Entrypoint: s.Entrypoint, User: s.User,
		WorkDir: s.WorkingDir, Init: s.Init != nil && *s.Init, CapAdd: caps(s.CapAdd), CapDrop: caps(s.CapDrop)}
	for _, v := range s.Volumes {
		switch v.Type {
		case types.VolumeTypeBind:
			spec.Mounts = append(spec.Mounts, runtime.Mount{Kind: runtime.MountBind, Source: v.Source, Target: v.Target, ReadOnly: v.ReadOnly})
		case types.VolumeTypeVolume:
			// A fresh, anonymous volume per stack: a study never starts from
			// a previous stack's data.
			spec.Mounts = append(spec.Mounts, runtime.Mount{Kind: runtime.MountVolume, Target: v.Target})
		case types.VolumeTypeTmpfs:
			spec.Mounts = append(spec.Mounts, runtime.Mount{Kind: runtime.MountTmpfs, Target: v.Target})
		default:
			return spec, fmt.Errorf("service %s: volume type %q at %s is not supported: use a bind mount, a volume or a tmpfs", s.Name, v.Type, v.Target)
		}
	}
	for _, t := range s.Tmpfs {
		target, opts, _ := strings.Cut(t, ":")
		spec.Mounts = append(spec.Mounts, runtime.Mount{Kind: runtime.MountTmpfs, Target: target, Source: opts})
	}
	if h := s.HealthCheck; h != nil && !h.Disable && len(h.Test) > 0 {
		hc := &runtime.HealthCheck{Test: h.Test}
		dur := func(d *types.Duration) time.Duration {
			if d == nil {
				return 0
			}
			return time.Duration(*d)
		}
		hc.Interval, hc.Timeout, hc.StartPeriod = dur(h.Interval), dur(h.Timeout), dur(h.StartPeriod)
		if h.Retries != nil {
			hc.Retries = int(*h.Retries)
		}
		spec.Health = hc
	}
	return spec, nil
}

// caps are a compose service's capabilities in the runtime's terms.
func caps(names []string) []runtime.Capability {
	var out []runtime.Capability
	for _, n := range names {
		out = append(out, runtime.Capability(n))
	}
	return out
}

// waitDependencies waits, before svc starts, for what its depends_on
// conditions ask of services already started: a one-shot service (a
// migration) to exit 0, a service with a health check to report healthy.
// The database is ready already (StartStack waits for it).
func waitDependencies(ctx context.Context, d runtime.Watcher, svc types.ServiceConfig, started map[string]*Member, timeout time.Duration) error {
	for name, dep := range svc.DependsOn {
		m := started[name]
		if m == nil || dep.Condition == types.ServiceConditionStarted {
			continue
		}
		deadline := time.Now().Add(timeout)
		for {
			st, err := d.State(ctx, m.ID)
			if err != nil {
				return err
			}
			done := false
			switch dep.Condition {
			case types.ServiceConditionCompletedSuccessfully:
				if !st.Running && exited(st) {
					if st.ExitCode != 0 {
						logs, _ := d.Logs(ctx, m.ID, 10)
						return fmt.Errorf("service %s, which %s waits for, exited %d; last log lines:\n%s", name, svc.Name, st.ExitCode, indent(logs))
					}
					done = true
				}
			case types.ServiceConditionHealthy:
				// Without a health check there is nothing more to wait for.
				done = st.Health == "" || st.Health == "healthy"
			default:
				done = true
			}
			if done {
				break
			}
			if dep.Condition == types.ServiceConditionHealthy {
				if err := CheckRunning(ctx, d, m); err != nil {
					return err
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("service %s waited %s for %s to be %s", svc.Name, timeout, name, strings.TrimPrefix(dep.Condition, "service_"))
			}
			if err := conc.Sleep(ctx, 300*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}
