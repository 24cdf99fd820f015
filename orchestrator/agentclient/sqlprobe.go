package agentclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rttlab/rttlab/workloads"
)

// SQLProbeOptions is the SELECT 1 probe (`agent sqlprobe`): Runs runs of
// Calls calls each against the PostgreSQL database at Host (port 5432).
type SQLProbeOptions struct {
	Host     string
	User     string
	Database string
	Password string
	Runs     int
	Calls    int
}

// SQLProbeArgs is the sqlprobe verb's command line for o.
func SQLProbeArgs(o SQLProbeOptions) []string {
	return []string{"--runs", fmt.Sprint(o.Runs), "--calls", fmt.Sprint(o.Calls)}
}

// SQLProbeEnv is the probe's connection, as libpq's environment.
func SQLProbeEnv(o SQLProbeOptions) []string {
	return []string{"PGHOST=" + o.Host, "PGPORT=5432", "PGUSER=" + o.User, "PGDATABASE=" + o.Database, "PGPASSWORD=" + o.Password, "PGSSLMODE=disable"}
}

// SQLProbe runs the SELECT 1 probe and decodes its runs.
func (c Client) SQLProbe(ctx context.Context, o SQLProbeOptions) ([]workloads.ProbeRun, error) {
	res, err := c.Exec(ctx, Call{Verb: "sqlprobe", Args: SQLProbeArgs(o), Env: SQLProbeEnv(o), Timeout: 10 * time.Minute, AnyExit: true})
	if err != nil {
		return nil, err
	}
	if res.Code != 0 {
		return nil, fmt.Errorf("SELECT 1 probe from %s: %s", c.Name, strings.TrimSpace(res.Stderr))
	}
	var runs []workloads.ProbeRun
	if err := json.Unmarshal(res.Stdout, &runs); err != nil {
		return nil, fmt.Errorf("SELECT 1 probe: %w", err)
	}
	return runs, nil
}
