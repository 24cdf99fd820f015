package raw

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rttlab/rttlab/orchestrator/shaping"
)

// The raw files of an RTT results folder that every run writes; shaper.csv,
// wire.csv, anatomy.jsonl and trace.json are beside them when the run
// wrote them.
const (
	SamplesFile = "samples.jsonl"
	TasksFile   = "tasks.jsonl"
	ProbesFile  = "probes.csv"
)

// TraceFile holds the per-request trace of each app's request types
// (written by the runner or `rttlab trace --results`); optional.
const TraceFile = "trace.json"

// Sample is one HTTP request of the load client, one JSON line in
// samples.jsonl. LatencyNS comes from the client's monotonic clock.
// RTTms is the configured RTT setting of the task, not a measurement.
type Sample struct {
	Task    int     `json:"task"`
	Attempt int     `json:"attempt"`
	App     string  `json:"app"`
	Route   string  `json:"route"`
	RTTms   float64 `json:"rtt_ms"`
	Run     int     `json:"run"`
	// Unshaped: the task ran with the shaper out of the path (the
	// app's unshaped baseline); RTTms is then 0.
	Unshaped  bool   `json:"unshaped,omitempty"`
	Seq       int    `json:"seq"`
	Warmup    bool   `json:"warmup"`
	LatencyNS int64  `json:"latency_ns"`
	Status    int    `json:"status"`
	Bytes     int64  `json:"bytes"`
	Error     string `json:"error,omitempty"`
	// Retried is set when Go's HTTP client re-sent the request on a new
	// connection because the kept-alive one had been closed; LatencyNS
	// then includes the first try and a new dial. Absent (false) in
	// folders written before the flag was kept.
	Retried bool `json:"retried,omitempty"`
}

// Failed reports whether the request failed: a status other than 200 or a
// transport error. Failed requests stay in samples.jsonl and are counted,
// but never enter the latency percentiles.
func (s Sample) Failed() bool { return s.Status != 200 || s.Error != "" }

// Task is one (app, route, setting, run) condition of the plan. The
// manifest lists the tasks in the shuffled order they are run in.
type Task struct {
	ID    int     `json:"id"`
	App   string  `json:"app"`
	Route string  `json:"route"`
	RTTms float64 `json:"rtt_ms"`
	Run   int     `json:"run"`
	// Unshaped: the app's baseline with the shaper out of the path (no
	// queue, no floor); RTTms is 0.
	Unshaped bool `json:"unshaped,omitempty"`
}

func (t Task) String() string {
	return fmt.Sprintf("task %d (%s %s %s, run %d)", t.ID, t.App, t.Route, t.Setting(), t.Run)
}

// Setting names the task's setting: "at 0.5 ms", or "unshaped".
func (t Task) Setting() string {
	if t.Unshaped {
		return "unshaped"
	}
	return "at " + fmtMs(t.RTTms) + " ms"
}

// RouteStatements is the number of sequential database statements one
// request of (App, Route) makes; it drives the "predicted" column
// (statements × RTT). Fractional values are allowed for weighted mixes.
type RouteStatements struct {
	App        string  `json:"app"`
	Route      string  `json:"route"`
	PerRequest float64 `json:"per_request"`
}

// Manifest describes one study; it is manifest.json. The runner writes it
// (with the task order) before the first task and again at the end with
// End set.
type Manifest struct {
	// Kind and Format: the study and the folder's format (results.Header);
	// a manifest of before has neither and reads as an RTT study of
	// format 1.
	Kind     string          `json:"kind,omitempty"`
	Format   int             `json:"format,omitempty"`
	PlanName string          `json:"plan_name"`
	Plan     json.RawMessage `json:"plan,omitempty"`
	Seed     uint64          `json:"seed"`
	Tasks    []Task          `json:"tasks"`
	// WireChecked: every task of the run writes its wire figures
	// (wire.csv, anatomy.jsonl), so a done task without them lost them.
	// Folders written before say nothing.
	WireChecked bool `json:"wire_checked,omitempty"`

	Version   string `json:"rttlab_version"`
	GitCommit string `json:"git_commit"`

	EngineVersion    string `json:"engine_version"`
	EngineAPIVersion string `json:"engine_api_version"`
	Kernel           string `json:"kernel"`
	// Platform the database and the apps ran (engine.Platform); Emulated when
	// it was not the engine's own, so timings make no claim.
	Platform string `json:"platform,omitempty"`
	Emulated bool   `json:"emulated,omitempty"`

	Shaper       string `json:"shaper"`
	ShaperReason string `json:"shaper_reason"`
	Scope        string `json:"scope"`

	// Images maps app name to image ID.
	Images map[string]string `json:"images,omitempty"`
	// Members say where each app's database and app ran (a cluster's
	// node), one entry per member each time a stack started.
	Members []MemberRecord `json:"members,omitempty"`

	HostCPUModel    string `json:"host_cpu_model"`
	HostCPUs        int    `json:"host_cpus"`
	HostMemoryBytes uint64 `json:"host_memory_bytes"`
	// HostIdle is how the host's CPUs idle (cpuidle driver and governor):
	// a waiting process's wake-up, and so the endpoints' own time, depends
	// on it. LoadStart and LoadEnd are the 1-minute load averages when the
	// run started and ended (null: not read).
	HostIdle  string   `json:"host_idle,omitempty"`
	LoadStart *float64 `json:"load_start,omitempty"`
	LoadEnd   *float64 `json:"load_end,omitempty"`

	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`

	// Skipped maps app name to the reason it was not run.
	Skipped    map[string]string `json:"skipped,omitempty"`
	Statements []RouteStatements `json:"statements,omitempty"`
	Notes      []string          `json:"notes,omitempty"`
	// Calibration is the per-side offset added to each setting's one-way
	// delay, per app, when the run calibrated its shaper.
	Calibration []shaping.CalibrationPoint `json:"calibration,omitempty"`
}

// StatementsFor returns the statements per request of (app, route).
func (m *Manifest) StatementsFor(app, route string) (float64, bool) {
	for _, s := range m.Statements {
		if s.App == app && s.Route == route {
			return s.PerRequest, true
		}
	}
	return 0, false
}

// Probe kinds in probes.csv.
const (
	// ProbeICMP is the per-setting ICMP check (one row per app and setting).
	ProbeICMP = "icmp"
	// ProbeICMPTask is the quick ICMP check before a task (one row per task).
	ProbeICMPTask = "icmp-task"
	// ProbeSelect1 is the SELECT 1 probe (one row per run, five runs per setting).
	ProbeSelect1 = "select1"
	// ProbeICMPUnshaped is the quick ICMP check before an unshaped task
	// (one row per task, setting 0).
	ProbeICMPUnshaped = "icmp-unshaped"
)

// Probe is one row of probes.csv: a batch of ICMP echoes or SELECT 1 calls
// at one setting. Failures counts lost packets (ICMP) or failed queries
// (SELECT 1). N is the number of probes sent. Task is set for
// ProbeICMPTask rows and 0 otherwise; Run counts from 1 for SELECT 1 rows.
type Probe struct {
	App      string
	Kind     string
	RTTms    float64
	Run      int
	Task     int
	N        int
	MeanMs   float64
	MedianMs float64
	MinMs    float64
	MaxMs    float64
	Failures int
}

// ProbeHeader is the header row of probes.csv.
var ProbeHeader = []string{"app", "kind", "rtt_ms", "run", "task", "n", "mean_ms", "median_ms", "min_ms", "max_ms", "failures"}

// Task record statuses in tasks.jsonl.
const (
	StatusDone   = "done"
	StatusFailed = "failed"
)

// TaskRecord is one line of tasks.jsonl: an attempt of a task that ended,
// either done (its samples are on disk) or failed (its samples, if any, are
// ignored).
type TaskRecord struct {
	Task    int       `json:"task"`
	Attempt int       `json:"attempt"`
	Status  string    `json:"status"`
	Error   string    `json:"error,omitempty"`
	Time    time.Time `json:"time"`
}

// ProbeRecord is p as a row of probes.csv (ProbeHeader).
func ProbeRecord(p *Probe) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return []string{
		p.App, p.Kind, f(p.RTTms), strconv.Itoa(p.Run), strconv.Itoa(p.Task), strconv.Itoa(p.N),
		f(p.MeanMs), f(p.MedianMs), f(p.MinMs), f(p.MaxMs), strconv.Itoa(p.Failures),
	}
}

func parseProbe(rec []string) (Probe, error) {
	p := Probe{App: rec[0], Kind: rec[1]}
	floats := []*float64{&p.RTTms, &p.MeanMs, &p.MedianMs, &p.MinMs, &p.MaxMs}
	fcols := []int{2, 6, 7, 8, 9}
	for i, c := range fcols {
		v, err := strconv.ParseFloat(rec[c], 64)
		if err != nil {
			return p, fmt.Errorf("column %s: %w", ProbeHeader[c], err)
		}
		*floats[i] = v
	}
	ints := []*int{&p.Run, &p.Task, &p.N, &p.Failures}
	icols := []int{3, 4, 5, 10}
	for i, c := range icols {
		v, err := strconv.Atoi(rec[c])
		if err != nil {
			return p, fmt.Errorf("column %s: %w", ProbeHeader[c], err)
		}
		*ints[i] = v
	}
	return p, nil
}

// CheckProbe is what every row of probes.csv satisfies.
func CheckProbe(p *Probe) error {
	switch p.Kind {
	case ProbeICMP, ProbeICMPTask, ProbeSelect1, ProbeICMPUnshaped:
	default:
		return fmt.Errorf("probe kind %q: want %s, %s, %s or %s", p.Kind, ProbeICMP, ProbeICMPTask, ProbeSelect1, ProbeICMPUnshaped)
	}
	if p.RTTms < 0 || p.N < 0 || p.Failures < 0 || p.Failures > p.N {
		return fmt.Errorf("probe %s at %s ms: negative setting or counts, or failures > n", p.Kind, fmtMs(p.RTTms))
	}
	return nil
}

// CheckSample is what every line of samples.jsonl satisfies.
func CheckSample(s *Sample) error {
	switch {
	case s.Attempt < 1:
		return fmt.Errorf("attempt %d: attempts count from 1", s.Attempt)
	case s.App == "" || s.Route == "":
		return errors.New("app or route is empty")
	case s.RTTms < 0:
		return fmt.Errorf("negative setting %v ms", s.RTTms)
	case s.LatencyNS < 0:
		return fmt.Errorf("negative latency %d ns", s.LatencyNS)
	}
	return nil
}

// CheckManifest is what every manifest of the RTT study satisfies.
func CheckManifest(m *Manifest) error {
	if m.PlanName == "" {
		return errors.New("plan name is empty")
	}
	seen := make(map[int]bool, len(m.Tasks))
	for _, t := range m.Tasks {
		if seen[t.ID] {
			return fmt.Errorf("task ID %d appears twice in the task list", t.ID)
		}
		seen[t.ID] = true
		if t.App == "" || t.Route == "" || t.RTTms < 0 {
			return fmt.Errorf("%s: empty app or route, or negative setting", t)
		}
	}
	return nil
}

// fmtMs prints a setting in milliseconds as the raw files and their
// messages write it: the shortest form that reads back the same (0.5, 1).
func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// MemberRecord is one member of an app's stack: its role (db, app), name
// and node. A user's member measured where it runs (Adopted) has its
// instance when the run found it (UID, Restarts) and when the run left it
// (UIDAfter, RestartsAfter): the same pod and restart count say rttlab
// neither replaced nor restarted it.
type MemberRecord struct {
	App           string `json:"app"`
	Role          string `json:"role"`
	Name          string `json:"name"`
	Node          string `json:"node,omitempty"`
	Adopted       bool   `json:"adopted,omitempty"`
	UID           string `json:"uid,omitempty"`
	Restarts      *int   `json:"restarts,omitempty"`
	UIDAfter      string `json:"uid_after,omitempty"`
	RestartsAfter *int   `json:"restarts_after,omitempty"`
}
