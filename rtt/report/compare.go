package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
)

// CompareRow is one cell (app, route, setting) present in both folders.
type CompareRow struct {
	App   string
	Route string
	RTTms float64
	// A and B are the cell as each folder's summary has it.
	A, B Cell
	// HasDiff is set when both cells have a change against 0 ms. DiffChange
	// = B.Change - A.Change; DiffCI is its 95% percentile-bootstrap
	// interval (BootstrapDiffChangeCI).
	HasDiff    bool
	DiffChange float64
	DiffCI     stats.Interval
	// LowN is set when either side's cell or baseline has too few runs.
	LowN bool
	// TooManyFailures is set when either side's cell or baseline has more
	// than Options.MaxFailedFraction failed measured requests.
	TooManyFailures bool
}

// ManifestDiff is one manifest field that differs between the folders.
type ManifestDiff struct{ Field, A, B string }

// Comparison sets the same cells of two results folders side by side.
type Comparison struct {
	DirA, DirB string
	A, B       *Summary
	// Settings are the configured settings both folders share.
	Settings []float64
	Rows     []CompareRow
	// OnlyA and OnlyB name the cells with data in one folder only
	// ("go /feed at 0.5 ms").
	OnlyA, OnlyB []string
	// Manifest lists the context that differs (shaper, versions, host...).
	Manifest []ManifestDiff
	Options  Options
}

// CompareKey is the NewRNG key of the difference-of-changes interval of a
// cell; the generator is seeded with A's plan seed, and the key also holds
// B's, so each pair of studies has its own stream.
func CompareKey(app, route string, rtt float64, seedB uint64) string {
	return "compare\x00" + app + "\x00" + route + "\x00" + fmtSetting(rtt) + "\x00" + strconv.FormatUint(seedB, 10)
}

// Compare loads two results folders and sets their common cells side by
// side: p50 and change (with CIs) of each, and the difference of the
// changes B - A with a bootstrap CI. It refuses folders whose plans have
// different settings, or that share no cell with data, and says why.
// Use case: the same study on two machines, two shapers, or two versions
// of an app.
func Compare(dirA, dirB string, o Options) (*Comparison, error) {
	a, err := raw.Load(dirA)
	if err != nil {
		return nil, fmt.Errorf("compare: folder A: %w", err)
	}
	b, err := raw.Load(dirB)
	if err != nil {
		return nil, fmt.Errorf("compare: folder B: %w", err)
	}
	c, err := CompareData(a, b, o)
	if err != nil {
		return nil, err
	}
	c.DirA, c.DirB = dirA, dirB
	return c, nil
}

// CompareData is Compare over loaded folders.
func CompareData(a, b *raw.Data, o Options) (*Comparison, error) {
	o = o.withDefaults()
	sa, sb := planSettings(&a.Manifest), planSettings(&b.Manifest)
	if !slices.Equal(sa, sb) {
		return nil, fmt.Errorf("compare: the folders have different settings: A has %s ms; B has %s ms", joinSettings(sa), joinSettings(sb))
	}
	c := &Comparison{DirA: a.Dir, DirB: b.Dir, A: Analyze(a, o), B: Analyze(b, o), Settings: sa, Options: o}
	cellsB := map[string]*Cell{}
	for i := range c.B.Cells {
		if x := &c.B.Cells[i]; x.NRuns > 0 {
			cellsB[CellKey(x.App, x.Route, x.RTTms)] = x
		}
	}
	inA := map[string]bool{}
	for i := range c.A.Cells {
		x := &c.A.Cells[i]
		if x.NRuns == 0 {
			continue
		}
		k := CellKey(x.App, x.Route, x.RTTms)
		inA[k] = true
		y := cellsB[k]
		if y == nil {
			c.OnlyA = append(c.OnlyA, cellName(x))
			continue
		}
		row := CompareRow{App: x.App, Route: x.Route, RTTms: x.RTTms, A: *x, B: *y,
			DiffChange: math.NaN(), DiffCI: stats.NoInterval(), LowN: x.LowN || y.LowN,
			TooManyFailures: x.TooManyFailures || y.TooManyFailures}
		if x.HasBaseline && y.HasBaseline {
			baseA := findCell(c.A, x.App, x.Route, 0)
			baseB := findCell(c.B, y.App, y.Route, 0)
			row.HasDiff = true
			row.DiffChange = y.Change - x.Change
			row.DiffCI = stats.BootstrapDiffChangeCI(baseA.P50s, x.P50s, baseB.P50s, y.P50s, o.Resamples,
				stats.NewRNG(a.Manifest.Seed, CompareKey(x.App, x.Route, x.RTTms, b.Manifest.Seed)))
		}
		c.Rows = append(c.Rows, row)
	}
	for i := range c.B.Cells {
		if y := &c.B.Cells[i]; y.NRuns > 0 && !inA[CellKey(y.App, y.Route, y.RTTms)] {
			c.OnlyB = append(c.OnlyB, cellName(y))
		}
	}
	if len(c.Rows) == 0 {
		return nil, fmt.Errorf("compare: no common cell with data: A has %s; B has %s", routeList(c.A), routeList(c.B))
	}
	c.Manifest = manifestDiffs(&a.Manifest, &b.Manifest)
	return c, nil
}

// planSettings returns the distinct settings of the manifest's tasks.
func planSettings(m *raw.Manifest) []float64 {
	out := make([]float64, len(m.Tasks))
	for i, t := range m.Tasks {
		out[i] = t.RTTms
	}
	return sortedDistinct(out)
}

// sortedDistinct sorts xs and drops repeats, in place.
func sortedDistinct(xs []float64) []float64 {
	slices.Sort(xs)
	return slices.Compact(xs)
}

func findCell(s *Summary, app, route string, rtt float64) *Cell {
	for i := range s.Cells {
		if c := &s.Cells[i]; c.App == app && c.Route == route && c.RTTms == rtt {
			return c
		}
	}
	return nil
}

func cellName(c *Cell) string {
	return fmt.Sprintf("%s %s at %s ms", c.App, c.Route, fmtSetting(c.RTTms))
}

func routeList(s *Summary) string {
	var names []string
	for _, k := range s.routes() {
		names = append(names, k.label())
	}
	if len(names) == 0 {
		return "no cell with data"
	}
	return strings.Join(names, ", ")
}

func manifestDiffs(a, b *raw.Manifest) []ManifestDiff {
	var out []ManifestDiff
	add := func(field, x, y string) {
		if x != y {
			out = append(out, ManifestDiff{field, x, y})
		}
	}
	add("plan", a.PlanName, b.PlanName)
	add("seed", strconv.FormatUint(a.Seed, 10), strconv.FormatUint(b.Seed, 10))
	add("rttlab version", strings.TrimSpace(a.Version+" "+parens(a.GitCommit)), strings.TrimSpace(b.Version+" "+parens(b.GitCommit)))
	add("Docker engine", a.EngineVersion, b.EngineVersion)
	add("kernel", a.Kernel, b.Kernel)
	add("shaper", a.Shaper, b.Shaper)
	add("scope", a.Scope, b.Scope)
	add("host CPU", a.HostCPUModel, b.HostCPUModel)
	add("host CPUs", strconv.Itoa(a.HostCPUs), strconv.Itoa(b.HostCPUs))
	apps := map[string]bool{}
	for k := range a.Images {
		apps[k] = true
	}
	for k := range b.Images {
		apps[k] = true
	}
	for _, app := range slices.Sorted(maps.Keys(apps)) {
		add("image "+app, a.Images[app], b.Images[app])
	}
	return out
}

// Markdown renders the comparison: the two folders and what differs
// between their manifests, one line per common non-zero cell in the
// study's words, a table per app (p50 A, p50 B, change A and B with CIs,
// the difference of changes B - A with its CI), and the cells present in
// one folder only.
func (c *Comparison) Markdown() []byte {
	o := c.Options.withDefaults()
	var b strings.Builder
	b.WriteString("# rttlab compare\n\n")
	compareSide(&b, "A", c.DirA, c.A)
	compareSide(&b, "B", c.DirB, c.B)
	fmt.Fprintf(&b, "\nSettings: %s ms. B − A is the difference of the changes against 0 ms; its 95%% CI is a percentile bootstrap (%d resamples) that resamples A's and B's baseline and target runs independently. \"~\": the interval includes 0: no measurable difference at these counts, which does not show that there is none. Fewer than %d runs, or more than %s failed measured requests, on either side: numbers shown, no claim.\n\n",
		joinSettings(c.Settings), o.Resamples, o.MinRuns, o.maxFailedPercent())
	c.manifestMarkdown(&b)
	c.differencesMarkdown(&b)
	var apps []string
	for _, r := range c.Rows {
		if len(apps) == 0 || apps[len(apps)-1] != r.App {
			apps = append(apps, r.App)
		}
	}
	for _, app := range apps {
		c.appMarkdown(&b, app)
	}
	c.onlyMarkdown(&b)
	return []byte(b.String())
}

// compareSide writes the line naming one side: its folder, plan, seed,
// tasks done and shaper.
func compareSide(b *strings.Builder, name, dir string, s *Summary) {
	fmt.Fprintf(b, "- **%s**: %s (plan %s, seed %d, %d of %d tasks done", name, dir, s.Plan, s.Seed, s.TasksDone, s.TasksPlanned)
	if s.Manifest.Shaper != "" {
		fmt.Fprintf(b, ", shaper %s", s.Manifest.Shaper)
	}
	b.WriteString(")\n")
}

// manifestMarkdown writes the table of manifest fields that differ, if any.
func (c *Comparison) manifestMarkdown(b *strings.Builder) {
	if len(c.Manifest) == 0 {
		return
	}
	b.WriteString("## What differs\n\n| field | A | B |\n| --- | --- | --- |\n")
	for _, d := range c.Manifest {
		fmt.Fprintf(b, "| %s | %s | %s |\n", d.Field, mdEscape(orDash(d.A)), mdEscape(orDash(d.B)))
	}
	b.WriteString("\n")
}

// differencesMarkdown writes one sentence per common cell with a change
// on both sides.
func (c *Comparison) differencesMarkdown(b *strings.Builder) {
	b.WriteString("## Differences\n\n")
	lines := 0
	for _, r := range c.Rows {
		if !r.HasDiff {
			continue
		}
		fmt.Fprintf(b, "%s %s at %s ms: change %s ms in A, %s ms in B; B − A = %s ms %s%s.\n\n",
			r.App, r.Route, fmtSetting(r.RTTms), fmtSigned(r.A.Change, 2), fmtSigned(r.B.Change, 2),
			fmtSigned(r.DiffChange, 2), fmtIv(r.DiffCI, 2), verdict(r))
		lines++
	}
	if lines == 0 {
		b.WriteString("No common cell has a change against 0 ms on both sides.\n\n")
	}
}

// appMarkdown writes one app's table, a row per common cell.
func (c *Comparison) appMarkdown(b *strings.Builder, app string) {
	fmt.Fprintf(b, "## %s\n\n", app)
	b.WriteString("| route | setting | runs A/B | p50 A (ms) | p50 B (ms) | change A (ms) | change A CI | change B (ms) | change B CI | B − A (ms) | B − A CI | note |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | --- | --- |\n")
	for _, r := range c.Rows {
		if r.App != app {
			continue
		}
		chA, chB, diff := dash, dash, dash
		if r.A.HasBaseline {
			chA = fmtSigned(r.A.Change, 3)
		}
		if r.B.HasBaseline {
			chB = fmtSigned(r.B.Change, 3)
		}
		if r.HasDiff {
			diff = fmtSigned(r.DiffChange, 3)
		}
		fmt.Fprintf(b, "| %s | %s ms | %d/%d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			mdEscape(r.Route), fmtSetting(r.RTTms), r.A.NRuns, r.B.NRuns, fmtFixed(r.A.P50, 3), fmtFixed(r.B.P50, 3),
			chA, fmtIv(r.A.ChangeCI, 3), chB, fmtIv(r.B.ChangeCI, 3), diff, fmtIv(r.DiffCI, 3), strings.TrimPrefix(verdict(r), " "))
	}
	b.WriteString("\n")
}

// onlyMarkdown lists the cells present in one folder only, if any.
func (c *Comparison) onlyMarkdown(b *strings.Builder) {
	if len(c.OnlyA)+len(c.OnlyB) == 0 {
		return
	}
	b.WriteString("## Cells in one folder only\n\n")
	for _, n := range c.OnlyA {
		b.WriteString("- only in A: " + n + "\n")
	}
	for _, n := range c.OnlyB {
		b.WriteString("- only in B: " + n + "\n")
	}
	b.WriteString("\n")
}

// verdict is the note of a row: no claim (low n, failed requests), or "~"
// when the interval of the difference includes 0 (no measurable
// difference, not evidence of none).
func verdict(r CompareRow) string {
	var v []string
	if r.HasDiff && r.DiffCI.Valid() && r.DiffCI.Low <= 0 && 0 <= r.DiffCI.High {
		v = append(v, "~")
	}
	if r.LowN {
		v = append(v, "low n, no claim")
	}
	if r.TooManyFailures {
		v = append(v, "failed requests, no claim")
	}
	if len(v) == 0 {
		return ""
	}
	return " (" + strings.Join(v, ", ") + ")"
}

func orDash(s string) string {
	if s == "" {
		return dash
	}
	return s
}
