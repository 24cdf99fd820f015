package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/results/plotkit"
	"github.com/rttlab/rttlab/results/stats"
)

// ReportFile is the self-contained HTML report inside a results folder.
const ReportFile = results.ReportPageFile

// Section ids of report.html, in order; the links at the top point at them.
var reportSections = []struct{ ID, Title string }{
	{"overview", "At a glance"},
	{"summary", "Summary"},
	{"anatomy", "Where the time goes"},
	{"tables", "Results by app"},
	{"plots", "Plots"},
	{"verification", "Verification"},
	{"warnings", "Warnings"},
	{"manifest", "Manifest"},
}

// leadPlots are the figures the report opens with, above every table.
var leadPlots = []string{PlotChange, PlotAttribution}

// htmlGrid is the compact table of the overview: a row per route, a
// column per setting above 0 ms.
type htmlGrid struct {
	Settings []string
	Rows     []htmlGridRow
}

type htmlGridRow struct {
	Route string
	Cells []htmlGridCell
}

// htmlGridCell is one route at one setting: the change and its CI, the
// wire's part, and the setting's verdict mark.
type htmlGridCell struct {
	Change, CI, Wire, Mark, Title string
	Bad, NoClaim, Empty           bool
}

// htmlAttr is one setting's attribution table.
type htmlAttr struct {
	Setting string
	Rows    []attrRow
}

type htmlRow struct {
	Route, Setting, Runs, P50, CI, Change, ChangeCI, Percent, Ratio, Predicted string
	Failures                                                                   string
	LowN, NoClaim                                                              bool
}

type htmlApp struct {
	App  string
	ID   string
	Rows []htmlRow
}

type htmlProbe struct {
	App, Kind, Setting, Value, Added, CI, Check string
	Rows, N, Failures                           int
	Flag                                        bool
}

type htmlPlot struct {
	ID, Name, Title, Description string
	SVG                          template.HTML
}

type htmlKV struct{ Key, Value string }

type htmlTask struct {
	ID, Run             int
	App, Route, Setting string
	Status              string
	Done                bool
}

type htmlFailure struct {
	Cell                                   string
	Failures, Total, WarmupFailed, Retried int
	Claim                                  string
}

type htmlReport struct {
	Plan      string
	Sections  []struct{ ID, Title string }
	Header    string
	Context   []string
	Method    string
	Verdict   []string
	Lead      []htmlPlot
	Grid      htmlGrid
	Attr      []htmlAttr
	AttrNote  string
	Baselines []baselineRow
	Seed      []seedRow
	SeedNote  string
	Wire      []wireRow
	WireNote  string
	Lines     []string
	Apps      []htmlApp
	Plots     []htmlPlot
	ProbeNote string
	Probes    []htmlProbe
	Flags     int
	Skipped   []htmlKV
	LowN      []string
	Failures  []htmlFailure
	MaxFailed string
	Warnings  []string
	Manifest  []htmlKV
	Images    []htmlKV
	Stmts     []htmlKV
	Notes     []string
	Tasks     []htmlTask
	PlanJSON  string
}

// HTML returns report.html: one self-contained page (inline CSS, the
// plots inlined as SVG, no script and no reference to any other file or
// address) with the summary sentences, a table per app, the plots, the
// verification table with its tolerance flags, warnings (low n, skipped
// apps, failed requests, everything Analyze noted) and the manifest, the
// task order folded in a <details>. The same summary and plots give the
// same bytes.
func (s *Summary) HTML(plots []plotkit.PlotFile) ([]byte, error) {
	o := s.Options.withDefaults()
	r := htmlReport{Plan: s.Plan, Sections: reportSections}
	r.header(s, o)
	r.cells(s, o)
	for _, p := range plots {
		hp := htmlPlot{ID: "plot-" + p.Name, Name: p.Name, Title: p.Title, Description: p.Description, SVG: template.HTML(inlineSVG(p.SVG))}
		if slices.Contains(leadPlots, p.Name) {
			r.Lead = append(r.Lead, hp)
			continue
		}
		r.Plots = append(r.Plots, hp)
	}
	r.overview(s)

	r.probes(s, o)
	r.manifest(s)
	var out bytes.Buffer
	if err := reportTemplate.Execute(&out, &r); err != nil {
		return nil, fmt.Errorf("write %s: %w", ReportFile, err)
	}
	return out.Bytes(), nil
}

// header fills the report's header: n, the CI method, the seed, the
// shaper and scope, the method line.
func (r *htmlReport) header(s *Summary, o Options) {
	m := &s.Manifest
	runsPerCell, reqPerRun := s.sizes()
	r.Header = fmt.Sprintf("n: %s runs per cell, %s measured requests per run (%d of %d tasks done). 95%% CI: %s; change CIs resample the 0 ms and target runs independently. Seed: %d.",
		intRange(runsPerCell), intRange(reqPerRun), s.TasksDone, s.TasksPlanned, o.CIMethod(), s.Seed)
	if m.Shaper != "" {
		sh := "Shaper: " + m.Shaper
		if m.ShaperReason != "" {
			sh += " (" + m.ShaperReason + ")"
		}
		r.Context = append(r.Context, sh+".")
	}
	if m.Scope != "" {
		r.Context = append(r.Context, "Scope: "+m.Scope+".")
	}
	r.Method = methodLine(o)
	r.MaxFailed = o.maxFailedPercent()

}

// cells fills the study lines, low-n and failure lists and the per-app
// tables from the summary's cells.
func (r *htmlReport) cells(s *Summary, o Options) {
	for _, c := range s.Cells {
		if c.RTTms != 0 {
			r.Lines = append(r.Lines, strings.ReplaceAll(studyLine(&c, o), "**", ""))
		}
		if c.LowN {
			line := fmt.Sprintf("%s %s at %s ms: %d runs", c.App, c.Route, fmtSetting(c.RTTms), c.NRuns)
			if c.HasBaseline {
				line += fmt.Sprintf(", %d at 0 ms", c.BaselineRuns)
			}
			r.LowN = append(r.LowN, fmt.Sprintf("%s; %d needed for a claim", line, o.MinRuns))
		}
		if c.Failures > 0 || c.WarmupFailures > 0 || c.Retried > 0 {
			f := htmlFailure{Cell: fmt.Sprintf("%s %s at %s ms", c.App, c.Route, fmtSetting(c.RTTms)),
				Failures: c.Failures, Total: c.Failures + c.NRequests, WarmupFailed: c.WarmupFailures, Retried: c.Retried, Claim: "yes"}
			if stats.FailedFraction(c.Failures, c.NRequests) > o.MaxFailedFraction {
				f.Claim = "no: more than " + o.maxFailedPercent() + " failed"
			}
			r.Failures = append(r.Failures, f)
		}
		if len(r.Apps) == 0 || r.Apps[len(r.Apps)-1].App != c.App {
			r.Apps = append(r.Apps, htmlApp{App: c.App, ID: "app-" + htmlID(c.App)})
		}
		row := htmlRow{Route: c.Route, Setting: fmtSetting(c.RTTms) + " ms", Runs: strconv.Itoa(c.NRuns),
			P50: fmtFixed(c.P50, 3), CI: fmtIv(c.CI, 3), Change: dash, ChangeCI: fmtIv(c.ChangeCI, 3), Percent: dash, Ratio: dash,
			Predicted: dash, Failures: failuresCell(&c, o), LowN: c.LowN, NoClaim: c.NoClaim()}
		if c.HasBaseline {
			row.Change, row.Ratio = fmtSigned(c.Change, 3), fmtFixed(c.Ratio, 2)
			row.Percent = fmtPercent(c.Percent, c.PercentCI)
		}
		if c.HasStatements && c.RTTms > 0 {
			row.Predicted = fmtSigned(c.Predicted, 3)
		}
		a := &r.Apps[len(r.Apps)-1]
		a.Rows = append(a.Rows, row)
	}

}

// overview fills what the report opens with: the verdict in three parts
// (the digest's lines), the compact table of routes × settings, and the
// tables of where the time went, of the baselines and of the wire.
func (r *htmlReport) overview(s *Summary) {
	d := &digest{}
	s.digestVerification(d)
	r.Verdict = d.lines
	r.grid(s)
	for _, rtt := range s.attributionSettings() {
		r.Attr = append(r.Attr, htmlAttr{Setting: fmtSetting(rtt) + " ms", Rows: s.attributionRows(rtt)})
	}
	if len(r.Attr) > 0 {
		r.AttrNote = "Method: " + AnatomyMethod + ". Wire = app↔database, both ways, every round trip; configured = round trips × RTT; round trips' = what a change of their number cost on the wire; excess = the wire's change beyond both; per trip = the wire's change per round trip ÷ RTT; client = the load client's own time and the client↔app legs; taken apart = the share of the measured requests joined to their latency (by the sequence number each carries) and taken apart; overlaps = the database exchanges beside the requests' own round trips."
	}
	r.Baselines = s.baselineRows()
	if r.Seed = s.seedRows(); len(r.Seed) > 0 {
		r.SeedNote = "The seed: " + seedHost + "; its 0 ms went through netem with no delay (compare with unshaped here), its change with the change against 0 ms here. Ratio = change ÷ (round trips × RTT). On the wire = the change the captures saw between the app and the database; endpoints = the app's and the database's own time, which the seed could not see."
	}
	r.Wire = s.wireRows()
	if len(r.Wire) > 0 {
		r.WireNote = fmt.Sprintf("One-way delay between the app and the database as both captures saw it on every task (median over tasks of each task's p50); added = against the 0 ms tasks; verified when both ways are within ±%g ms of half the RTT with at least %.0f%% of packets paired.", WireToleranceMs, 100*WireMinMatched)
	}
}

// grid fills the compact table: per route, per setting above 0 ms, the
// change with its CI, the wire's part and a mark.
func (r *htmlReport) grid(s *Summary) {
	var settings []float64
	for _, c := range s.Cells {
		if c.RTTms > 0 {
			settings = append(settings, c.RTTms)
		}
	}
	settings = sortedDistinct(settings)
	for _, v := range settings {
		r.Grid.Settings = append(r.Grid.Settings, fmtSetting(v)+" ms")
	}
	for _, k := range s.routes() {
		row := htmlGridRow{Route: k.label()}
		for _, v := range settings {
			c := findCell(s, k.app, k.route, v)
			if c == nil || !c.HasBaseline {
				row.Cells = append(row.Cells, htmlGridCell{Empty: true})
				continue
			}
			gc := htmlGridCell{Change: fmtSigned(c.Change, 2), CI: fmtIv(c.ChangeCI, 2), Wire: dash, Mark: "✓", Title: "verified", NoClaim: c.NoClaim()}
			if c.HasAttribution {
				gc.Wire = "wire " + fmtSigned(c.Attribution.Wire(), 2)
			}
			if len(c.Unverified) > 0 {
				gc.Mark, gc.Bad, gc.Title = unverifiedMark, true, strings.Join(c.Unverified, "; ")
			}
			row.Cells = append(row.Cells, gc)
		}
		r.Grid.Rows = append(r.Grid.Rows, row)
	}
}

// probes fills the verification probes' table and its note.
func (r *htmlReport) probes(s *Summary, o Options) {
	r.ProbeNote = fmt.Sprintf("icmp: ICMP median RTT of the setting's check; icmp-task: median of the medians of the quick checks before each task; select1: median of the run medians of SELECT 1. Added = value − value at 0 ms (select1: 95%% CI by percentile bootstrap over the run medians). Tolerance: |added − setting| ≤ %s ms.",
		fmtSetting(o.ToleranceMs))
	for _, p := range s.Probes {
		hp := htmlProbe{App: p.App, Kind: p.Kind, Setting: fmtSetting(p.RTTms) + " ms", Rows: p.Rows, N: p.N, Failures: p.Failures,
			Value: fmtFixed(p.Value, 3), Added: dash, CI: fmtIv(p.CI, 3), Check: dash}
		if p.HasBaseline {
			hp.Added, hp.Check = fmtSigned(p.Added, 3), "ok"
			if p.OutOfTolerance {
				hp.Check, hp.Flag = "out of tolerance", true
				r.Flags++
			}
		}
		r.Probes = append(r.Probes, hp)
	}

}

// manifest fills what the report tells of the run itself: skipped apps,
// warnings, the manifest's facts, images, statements, notes, the tasks and
// the plan.
func (r *htmlReport) manifest(s *Summary) {
	m := &s.Manifest
	for _, app := range slices.Sorted(maps.Keys(m.Skipped)) {
		r.Skipped = append(r.Skipped, htmlKV{app, m.Skipped[app]})
	}
	r.Warnings = s.Warnings
	r.manifestFacts(s)
	for _, app := range slices.Sorted(maps.Keys(m.Images)) {
		r.Images = append(r.Images, htmlKV{app, m.Images[app]})
	}
	for _, st := range m.Statements {
		r.Stmts = append(r.Stmts, htmlKV{st.App + " " + st.Route, strconv.FormatFloat(st.PerRequest, 'f', -1, 64)})
	}
	r.Notes = m.Notes
	r.taskList(s)
	if len(m.Plan) > 0 {
		var b bytes.Buffer
		if err := json.Indent(&b, m.Plan, "", "  "); err == nil {
			r.PlanJSON = b.String()
		} else {
			r.PlanJSON = string(m.Plan)
		}
	}
}

// manifestFacts fills the table of the manifest's facts (plan, versions,
// host, times, tasks), leaving out the ones not recorded.
func (r *htmlReport) manifestFacts(s *Summary) {
	m := &s.Manifest
	kv := func(k, v string) {
		if v != "" {
			r.Manifest = append(r.Manifest, htmlKV{k, v})
		}
	}
	kv("plan", m.PlanName)
	kv("seed", strconv.FormatUint(m.Seed, 10))
	kv("rttlab version", strings.TrimSpace(m.Version+" "+parens(m.GitCommit)))
	kv("Docker engine", strings.TrimSpace(m.EngineVersion+" "+parens(apiVersion(m.EngineAPIVersion))))
	kv("kernel", m.Kernel)
	kv("shaper", m.Shaper)
	kv("why this shaper", m.ShaperReason)
	kv("scope", m.Scope)
	kv("host CPU", m.HostCPUModel)
	if m.HostCPUs > 0 {
		kv("host CPUs", strconv.Itoa(m.HostCPUs))
	}
	if m.HostMemoryBytes > 0 {
		kv("host memory", fmt.Sprintf("%.1f GiB", float64(m.HostMemoryBytes)/(1<<30)))
	}
	kv("host CPUs idle with", m.HostIdle)
	if m.LoadStart != nil && m.LoadEnd != nil {
		kv("load average (start, end)", fmt.Sprintf("%.2f, %.2f", *m.LoadStart, *m.LoadEnd))
	}
	if !m.Start.IsZero() {
		kv("start", m.Start.UTC().Format(time.RFC3339))
	}
	if !m.End.IsZero() {
		kv("end", m.End.UTC().Format(time.RFC3339))
		if !m.Start.IsZero() {
			kv("duration", m.End.Sub(m.Start).Round(time.Second).String())
		}
	} else {
		kv("end", "not recorded (the study did not finish, or is still running)")
	}
	kv("tasks", fmt.Sprintf("%d planned, %d done", s.TasksPlanned, s.TasksDone))
}

// taskList fills the task order: every task of the manifest as run, with
// its status and the attempt that counts.
func (r *htmlReport) taskList(s *Summary) {
	for _, t := range s.Manifest.Tasks {
		ht := htmlTask{ID: t.ID, Run: t.Run, App: t.App, Route: t.Route, Setting: fmtSetting(t.RTTms) + " ms", Status: "not done"}
		if a, ok := s.doneAttempt(t.ID); ok {
			ht.Done, ht.Status = true, "done"
			if a > 1 {
				ht.Status = fmt.Sprintf("done (attempt %d)", a)
			}
		}
		r.Tasks = append(r.Tasks, ht)
	}
}

// doneAttempt returns the attempt of task that counts, from the runs.
func (s *Summary) doneAttempt(task int) (int, bool) {
	for _, r := range s.Runs {
		if r.Task == task {
			return r.Attempt, true
		}
	}
	return 0, false
}

func parens(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

func apiVersion(s string) string {
	if s == "" {
		return ""
	}
	return "API " + s
}

// htmlID turns a name into an id token.
func htmlID(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '-'
	}, s)
}

// inlineSVG prepares a plot for the page: it drops the XML prolog and
// the generator comment and the namespace declarations, which HTML does
// not need, so the page holds no address at all.
func inlineSVG(b []byte) string {
	s := string(b)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	s = strings.Replace(s, "\n\txmlns=\"http://www.w3.org/2000/svg\"", "", 1)
	s = strings.Replace(s, "\n\txmlns:xlink=\"http://www.w3.org/1999/xlink\"", "", 1)
	return strings.TrimSpace(s)
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"inc": func(i int) int { return i + 1 },
}).Parse(reportHTML))

const reportHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rttlab report: {{.Plan}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1em 1.5em 3em; color: #1a1a1a; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { font-size: 1.3em; border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
h3 { font-size: 1.1em; margin-top: 1.4em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: .6em 0 1em; font-size: .92em; }
th, td { border: 1px solid #d0d0d0; padding: .25em .55em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.lown td { color: #7a5a00; background: #fff8e1; }
tr.flag td { background: #fde8e8; }
td.bad { color: #b00020; font-weight: bold; }
td.ok { color: #1b5e20; }
.meta { color: #444; }
figure { margin: 1.5em 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: .92em; color: #333; }
ul.lines li { margin-bottom: .35em; }
details { margin: .6em 0; }
summary { cursor: pointer; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: .88em; }
.none { color: #555; }
ul.verdict li { margin-bottom: .3em; }
div.lead { display: flex; flex-wrap: wrap; gap: 1.5%; }
div.lead figure { flex: 1 1 49%; min-width: 380px; margin: .6em 0; }
div.lead figcaption { font-size: .85em; }
table.grid td { min-width: 8.5em; }
table.grid .mark { color: #1b5e20; }
table.grid td.flagcell { background: #fde8e8; }
table.grid td.flagcell .mark { color: #b00020; }
table.grid td.lowncell { background: #fff8e1; }
.wirepart { color: #555; font-size: .9em; }
</style>
</head>
<body>
<header>
<h1>rttlab report: {{.Plan}}</h1>
<p class="meta">{{.Header}}</p>
<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}</nav>
</header>

<section id="overview">
<h2>At a glance</h2>
{{with .Verdict}}<ul class="verdict">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .Lead}}<div class="lead">
{{range .}}<figure id="{{.ID}}">
{{.SVG}}
<figcaption><strong>{{.Title}}.</strong> {{.Description}} (Also plots/{{.Name}}.svg and plots/{{.Name}}.png.)</figcaption>
</figure>
{{end}}</div>
{{end}}{{if .Grid.Rows}}<table class="grid">
<thead><tr><th>change of p50 (ms), 95% CI</th>{{range .Grid.Settings}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Grid.Rows}}<tr><th>{{.Route}}</th>{{range .Cells}}{{if .Empty}}<td class="none">–</td>{{else}}<td class="num{{if .Bad}} flagcell{{end}}{{if .NoClaim}} lowncell{{end}}" title="{{.Title}}"><span class="mark">{{.Mark}}</span> <strong>{{.Change}}</strong> {{.CI}}<br><span class="wirepart">{{.Wire}}</span></td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table>
<p class="meta">✓ the setting's delay verified{{if .Wire}} on the wire{{end}}; ⚠ not verified (hover for why); a shaded cell makes no claim (too few runs or too many failures).</p>{{end}}
</section>

<section id="summary">
<h2>Summary</h2>
{{with .Context}}<p class="meta">{{range $i, $c := .}}{{if $i}} {{end}}{{$c}}{{end}}</p>{{end}}
<p class="meta">{{.Method}}</p>
{{if .Lines}}<details>
<summary>{{len .Lines}} sentences, one per route and setting</summary>
<ul class="lines">
{{range .Lines}}<li>{{.}}</li>
{{end}}</ul>
</details>{{else}}<p class="none">No cell with a non-zero setting has data.</p>{{end}}
</section>

<section id="anatomy">
<h2>Where the time goes</h2>
{{if .Attr}}<p class="meta">{{.AttrNote}}</p>
{{range .Attr}}<h3>At {{.Setting}}</h3>
<table>
<thead><tr><th>route</th><th>change (ms)</th><th>change CI</th><th>parts' change</th><th>wire</th><th>configured</th><th>round trips'</th><th>wire excess</th><th>per trip</th><th>app</th><th>database</th><th>client</th><th>round trips</th><th>taken apart</th><th>overlaps</th></tr></thead>
<tbody>
{{range .Rows}}<tr><td>{{.Route}}</td><td class="num">{{.Change}}</td><td class="num">{{.ChangeCI}}</td><td class="num">{{.Total}}</td><td class="num">{{.Wire}}</td><td class="num">{{.Configured}}</td><td class="num">{{.Trips}}</td><td class="num">{{.Excess}}</td><td class="num">{{.PerTrip}}</td><td class="num">{{.App}}</td><td class="num">{{.DB}}</td><td class="num">{{.Client}}</td><td class="num">{{.RoundTrips}}</td><td class="num">{{.TakenApart}}</td><td class="num">{{.Overlaps}}</td></tr>
{{end}}</tbody>
</table>
{{end}}{{else}}<p class="none">No request was taken apart on the wire (a folder written before every task captured its packets).</p>{{end}}
{{with .Baselines}}<h3 id="baselines">Baselines: without the shaper and through it at 0 ms</h3>
<p class="meta">Unshaped: the shaper out of the path (no queue, no floor); 0 ms: through the shaper with no delay, which every setting pays. Changes are against 0 ms, percent changes against the unshaped p50.</p>
<table>
<thead><tr><th>route</th><th>runs (unshaped, 0 ms)</th><th>unshaped p50 (ms)</th><th>95% CI</th><th>0 ms p50 (ms)</th><th>95% CI</th><th>the shaper's cost at 0 ms</th><th>per round trip</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Route}}</td><td class="num">{{.Runs}}</td><td class="num">{{.Unshaped}}</td><td class="num">{{.UnshapedCI}}</td><td class="num">{{.Zero}}</td><td class="num">{{.ZeroCI}}</td><td class="num">{{.Shaper}}</td><td class="num">{{.PerTrip}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{with .Seed}}<h3 id="seed">Beside the seed, at 0.75 ms</h3>
<p class="meta">{{$.SeedNote}}</p>
<table>
<thead><tr><th>route</th><th>seed 0 ms p50</th><th>unshaped p50 here</th><th>seed change [CI]</th><th>change here [CI]</th><th>seed ratio</th><th>ratio here</th><th>on the wire</th><th>per trip ÷ RTT</th><th>endpoints</th><th>inside the seed's CI</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Route}}</td><td class="num">{{.SeedBase}}</td><td class="num">{{.Unshaped}}</td><td class="num">{{.SeedChange}}</td><td class="num">{{.Change}}</td><td class="num">{{.SeedRatio}}</td><td class="num">{{.Ratio}}</td><td class="num">{{.Wire}}</td><td class="num">{{.WireRatio}}</td><td>{{.Endpoints}}</td><td>{{.Inside}}</td></tr>
{{end}}</tbody>
</table>{{end}}
</section>

<section id="tables">
<h2>Results by app</h2>
{{range .Apps}}<h3 id="{{.ID}}">{{.App}}</h3>
<table>
<thead><tr><th>route</th><th>setting</th><th>runs</th><th>p50 (ms)</th><th>95% CI</th><th>change (ms)</th><th>change CI</th><th>change % [CI]</th><th>ratio</th><th>predicted (ms)</th><th>failures</th></tr></thead>
<tbody>
{{range .Rows}}<tr{{if .NoClaim}} class="lown"{{end}}><td>{{.Route}}</td><td class="num">{{.Setting}}</td><td class="num">{{.Runs}}{{if .LowN}} (low n){{end}}</td><td class="num">{{.P50}}</td><td class="num">{{.CI}}</td><td class="num">{{.Change}}</td><td class="num">{{.ChangeCI}}</td><td class="num">{{.Percent}}</td><td class="num">{{.Ratio}}</td><td class="num">{{.Predicted}}</td><td class="num">{{.Failures}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p class="none">No cells.</p>
{{end}}</section>

<section id="plots">
<h2>Plots</h2>
{{range .Plots}}<figure id="{{.ID}}">
{{.SVG}}
<figcaption><strong>{{.Title}}.</strong> {{.Description}} (Also plots/{{.Name}}.svg and plots/{{.Name}}.png.)</figcaption>
</figure>
{{else}}<p class="none">No data to plot.</p>
{{end}}</section>

<section id="verification">
<h2>Verification</h2>
{{if .Wire}}<h3 id="verification-wire">The wire</h3>
<p class="meta">{{.WireNote}}</p>
<table>
<thead><tr><th>app</th><th>setting</th><th>direction</th><th>tasks</th><th>packets</th><th>paired</th><th>one-way p50 (ms)</th><th>one-way p99 (ms)</th><th>added (ms)</th><th>target (ms)</th><th>passing</th><th>verdict</th></tr></thead>
<tbody>
{{range .Wire}}<tr{{if .Bad}} class="flag"{{end}}><td>{{.App}}</td><td class="num">{{.Setting}}</td><td>{{.Direction}}</td><td class="num">{{.Tasks}}</td><td class="num">{{.Packets}}</td><td class="num">{{.Paired}}</td><td class="num">{{.P50}}</td><td class="num">{{.P99}}</td><td class="num">{{.Added}}</td><td class="num">{{.Target}}</td><td class="num">{{.Passing}}</td><td{{if .Bad}} class="bad"{{end}}>{{.Verdict}}</td></tr>
{{end}}</tbody>
</table>
<h3 id="verification-probes">Probes (reported beside the wire, not the verdict)</h3>
{{end}}{{if .Probes}}<p class="meta">{{.ProbeNote}}</p>
{{if .Flags}}{{if .Wire}}<p><strong>{{.Flags}} probe value(s) out of tolerance</strong>: reported, not the verdict: a probe's process wakes up in its own time, the wire above shows what the shaper delivered.</p>{{else}}<p><strong>{{.Flags}} probe value(s) out of tolerance</strong>: the shaper did not deliver the configured delay there; read the changes at those settings with care.</p>{{end}}{{end}}
<table>
<thead><tr><th>app</th><th>probe</th><th>setting</th><th>rows</th><th>n</th><th>lost/failed</th><th>value (ms)</th><th>added (ms)</th><th>95% CI</th><th>check</th></tr></thead>
<tbody>
{{range .Probes}}<tr{{if .Flag}} class="flag"{{end}}><td>{{.App}}</td><td>{{.Kind}}</td><td class="num">{{.Setting}}</td><td class="num">{{.Rows}}</td><td class="num">{{.N}}</td><td class="num">{{.Failures}}</td><td class="num">{{.Value}}</td><td class="num">{{.Added}}</td><td class="num">{{.CI}}</td><td{{if .Flag}} class="bad"{{else if eq .Check "ok"}} class="ok"{{end}}>{{.Check}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p class="none">No probes recorded.</p>
{{end}}</section>

<section id="warnings">
<h2>Warnings</h2>
<h3 id="warnings-lown">Low n</h3>
{{if .LowN}}<ul>{{range .LowN}}<li>{{.}}</li>{{end}}</ul>{{else}}<p class="none">Every cell has enough runs.</p>{{end}}
<h3 id="warnings-skipped">Skipped apps</h3>
{{if .Skipped}}<table><thead><tr><th>app</th><th>reason</th></tr></thead><tbody>
{{range .Skipped}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>
{{end}}</tbody></table>{{else}}<p class="none">None.</p>{{end}}
<h3 id="warnings-failures">Failed requests</h3>
{{if .Failures}}<table><thead><tr><th>cell</th><th>failed measured requests</th><th>failed warmup requests</th><th>re-sent by the client</th><th>claim (at most {{.MaxFailed}} failed)</th></tr></thead><tbody>
{{range .Failures}}<tr><td>{{.Cell}}</td><td class="num">{{.Failures}} of {{.Total}}</td><td class="num">{{.WarmupFailed}}</td><td class="num">{{.Retried}}</td><td>{{.Claim}}</td></tr>
{{end}}</tbody></table>{{else}}<p class="none">None.</p>{{end}}
<h3 id="warnings-all">All warnings</h3>
{{if .Warnings}}<ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{else}}<p class="none">None.</p>{{end}}
</section>

<section id="manifest">
<h2>Manifest</h2>
<table><tbody>
{{range .Manifest}}<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>
{{end}}</tbody></table>
{{with .Images}}<h3 id="manifest-images">Images</h3>
<table><thead><tr><th>app</th><th>image ID</th></tr></thead><tbody>
{{range .}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>
{{end}}</tbody></table>{{end}}
{{with .Stmts}}<h3 id="manifest-statements">Statements per request</h3>
<table><thead><tr><th>app and route</th><th>statements</th></tr></thead><tbody>
{{range .}}<tr><td>{{.Key}}</td><td class="num">{{.Value}}</td></tr>
{{end}}</tbody></table>{{end}}
{{with .Notes}}<h3 id="manifest-notes">Notes</h3>
<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
<details id="task-order">
<summary>Task order ({{len .Tasks}} tasks, as run)</summary>
<table><thead><tr><th>#</th><th>task</th><th>app</th><th>route</th><th>setting</th><th>run</th><th>status</th></tr></thead><tbody>
{{range $i, $t := .Tasks}}<tr><td class="num">{{inc $i}}</td><td class="num">{{$t.ID}}</td><td>{{$t.App}}</td><td>{{$t.Route}}</td><td class="num">{{$t.Setting}}</td><td class="num">{{$t.Run}}</td><td>{{$t.Status}}</td></tr>
{{end}}</tbody></table>
</details>
{{with .PlanJSON}}<details id="plan">
<summary>Plan</summary>
<pre>{{.}}</pre>
</details>{{end}}
</section>
</body>
</html>
`
