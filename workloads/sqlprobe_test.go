package workloads

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pgBinDir finds the PostgreSQL server binaries: $RTTLAB_PG_BIN, then
// initdb on PATH, then the newest /usr/lib/postgresql/N/bin (Debian).
func pgBinDir() (string, error) {
	if d := os.Getenv("RTTLAB_PG_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("RTTLAB_PG_BIN=%s: %w", d, err)
		}
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestVer := "", -1
	for _, d := range dirs {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil && v > bestVer {
			best, bestVer = d, v
		}
	}
	if best == "" {
		return "", fmt.Errorf("no initdb on PATH, in $RTTLAB_PG_BIN or under /usr/lib/postgresql/*/bin")
	}
	return best, nil
}

// freePort returns a localhost TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPostgres starts a throwaway PostgreSQL server in t.TempDir(),
// listening on a random 127.0.0.1 port with trust authentication, and
// stops it when the test ends. As root it runs the server as the postgres
// user through runuser. It returns a DSN for the superuser "postgres" and
// the port.
func startPostgres(t *testing.T) (string, int) {
	t.Helper()
	if os.Getenv("RTTLAB_SKIP_PG") == "1" {
		t.Skip("RTTLAB_SKIP_PG=1: skipping the test that needs a PostgreSQL server")
	}
	bin, err := pgBinDir()
	if err != nil {
		t.Fatalf("PostgreSQL server binaries are required: %v. Install them (Debian: apt-get install -y postgresql) or set RTTLAB_SKIP_PG=1 to skip this test", err)
	}

	dir := t.TempDir()
	var wrap []string
	if os.Geteuid() == 0 {
		// The server refuses to run as root: run it as postgres, which
		// needs to reach and own the data folder.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user for the server: %v", err)
		}
		runuser, err := exec.LookPath("runuser")
		if err != nil {
			t.Fatalf("running as root needs runuser (util-linux): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		wrap = []string{runuser, "-u", "postgres", "--"}
	}
	run := func(timeout time.Duration, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		argv := append(slices.Clone(wrap), filepath.Join(bin, name))
		argv = append(argv, args...)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	data := filepath.Join(dir, "data")
	if out, err := run(2*time.Minute, "initdb", "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}

	logFile := filepath.Join(dir, "server.log")
	var port int
	started := false
	for attempt := 0; attempt < 3 && !started; attempt++ {
		port = freePort(t)
		opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off", port)
		out, err := run(time.Minute, "pg_ctl", "-D", data, "-l", logFile, "-w", "-t", "30", "-o", opts, "start")
		if err == nil {
			started = true
			break
		}
		logText, _ := os.ReadFile(logFile)
		t.Logf("pg_ctl start on port %d: %v\n%s\n%s", port, err, out, logText)
	}
	if !started {
		t.Fatalf("could not start PostgreSQL from %s", bin)
	}
	t.Cleanup(func() {
		if out, err := run(time.Minute, "pg_ctl", "-D", data, "-m", "fast", "-w", "stop"); err != nil {
			t.Errorf("pg_ctl stop: %v\n%s", err, out)
		}
	})
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), port
}

func TestSelectOneAgainstPostgres(t *testing.T) {
	dsn, port := startPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	runs, err := SelectOne(ctx, dsn, 3, 50)
	if err != nil {
		t.Fatalf("SelectOne: %v", err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3", len(runs))
	}
	for i, r := range runs {
		if r.Run != i || r.N != 50 || len(r.Samples) != 50 || r.Failures != 0 {
			t.Fatalf("run %d: %+v", i, r)
		}
		if !(0 < r.Min && r.Min <= r.Median && r.Median <= r.Max && r.Min <= r.Mean && r.Mean <= r.Max) {
			t.Errorf("run %d: inconsistent statistics min %s median %s mean %s max %s", i, r.Min, r.Median, r.Mean, r.Max)
		}
		// Loose sanity bound only: a local SELECT 1 takes tens of µs.
		if r.Median > 50*time.Millisecond {
			t.Errorf("run %d: median %s is implausible for a local round trip", i, r.Median)
		}
		t.Logf("run %d: n=%d median %s mean %s min %s max %s", i, r.N, r.Median, r.Mean, r.Min, r.Max)
	}

	// An empty DSN takes the settings from the PG* environment.
	t.Setenv("PGHOST", "127.0.0.1")
	t.Setenv("PGPORT", strconv.Itoa(port))
	t.Setenv("PGUSER", "postgres")
	t.Setenv("PGDATABASE", "postgres")
	t.Setenv("PGSSLMODE", "disable")
	runs, err = SelectOne(ctx, "", 1, 5)
	if err != nil || len(runs) != 1 || runs[0].N != 5 {
		t.Fatalf("SelectOne from PG* variables: %+v, %v", runs, err)
	}
}

func TestSelectOneErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := SelectOne(ctx, "postgres://127.0.0.1:1/x", 0, 10); err == nil {
		t.Error("zero runs accepted")
	}
	if _, err := SelectOne(ctx, "postgres://127.0.0.1:1/x", 1, 0); err == nil {
		t.Error("zero calls accepted")
	}
	if _, err := SelectOne(ctx, "::not a dsn", 1, 1); err == nil {
		t.Error("malformed DSN accepted")
	}
	// Nothing listens on this port: the probe must say it could not connect.
	port := freePort(t)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := SelectOne(cctx, fmt.Sprintf("postgres://u@127.0.0.1:%d/x?sslmode=disable&connect_timeout=5", port), 1, 1)
	if err == nil || !strings.Contains(err.Error(), "connect") {
		t.Errorf("err = %v, want a connect error", err)
	}
}

func TestProbeRunStatistics(t *testing.T) {
	ms := time.Millisecond
	r := ProbeRun{Samples: []time.Duration{4 * ms, 1 * ms, 3 * ms, 2 * ms}}.finish()
	if r.N != 4 || r.Min != ms || r.Max != 4*ms || r.Median != 2500*time.Microsecond || r.Mean != 2500*time.Microsecond {
		t.Errorf("even: %+v", r)
	}
	if r.Samples[0] != 4*ms {
		t.Error("finish reordered the raw samples")
	}
	r = ProbeRun{Samples: []time.Duration{9 * ms, 1 * ms, 2 * ms}}.finish()
	if r.N != 3 || r.Median != 2*ms || r.Mean != 4*ms {
		t.Errorf("odd: %+v", r)
	}
	r = ProbeRun{Failures: 2}.finish()
	if r.N != 0 || r.Median != 0 || r.Failures != 2 {
		t.Errorf("empty: %+v", r)
	}
}
