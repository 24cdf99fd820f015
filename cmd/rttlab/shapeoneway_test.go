package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/workloads"
)

func oneWayRows() []shaping.ShapeRow {
	dir := func(name string, p50 float64, added bool) shaping.OneWayDirection {
		return shaping.OneWayDirection{Direction: name, AddedP50Ms: p50 - 0.02, HaveAdded: added,
			OneWay: workloads.OneWay{Sent: 200, Matched: 199, Share: 0.995, Lost: 1, P50Ms: p50, P90Ms: p50 + 0.01, P99Ms: p50 + 0.05, MinMs: p50 - 0.01, MaxMs: p50 + 0.1}}
	}
	return []shaping.ShapeRow{
		{NoShaper: true, OneWay: []shaping.OneWayDirection{dir(shaping.DirAppToDB, 0.02, false), dir(shaping.DirDBToApp, 0.02, false)}},
		{RTTms: 1, HaveBaseline: true, OneWay: []shaping.OneWayDirection{
			dir(shaping.DirAppToDB, 0.52, true),
			{Direction: shaping.DirDBToApp, OneWay: workloads.OneWay{Sent: 3, Lost: 1, Ambiguous: 2, Truncated: true}},
		}},
	}
}

// The JSON rows carry the one-way check per direction; figures that do
// not exist (nothing paired, no baseline) are null, not zero.
func TestVerifyJSONOneWay(t *testing.T) {
	var b bytes.Buffer
	o := shaping.ShapeVerifyOptions{OneWay: true}
	if err := shaping.WriteVerifyJSON(&b, &shaping.Shaping{Backend: "userspace", Scope: "path"}, o, oneWayRows(), nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Method string `json:"one_way_method"`
		Rows   []struct {
			ICMPMedian *float64         `json:"icmp_median_ms"`
			OneWay     []map[string]any `json:"one_way"`
			Shaper     []map[string]any `json:"shaper"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Method, "CLOCK_REALTIME") || len(doc.Rows) != 2 || doc.Rows[0].ICMPMedian == nil {
		t.Fatalf("doc: %s", b.String())
	}
	ref, one := doc.Rows[0].OneWay, doc.Rows[1].OneWay
	if len(ref) != 2 || ref[0]["direction"] != "app->db" || ref[0]["added_p50_ms"] != nil || ref[0]["p50_ms"] != 0.02 || ref[0]["matched_share"] != 0.995 {
		t.Errorf("reference row: %v", ref)
	}
	near := func(v any, want float64) bool { f, ok := v.(float64); return ok && f > want-1e-9 && f < want+1e-9 }
	if !near(one[0]["added_p50_ms"], 0.5) || !near(one[0]["p99_ms"], 0.57) || one[0]["sent"] != 200.0 || one[0]["lost"] != 1.0 {
		t.Errorf("1 ms app->db: %v", one[0])
	}
	if one[1]["p50_ms"] != nil || one[1]["min_ms"] != nil || one[1]["added_p50_ms"] != nil || one[1]["ambiguous"] != 2.0 || one[1]["capture_truncated"] != true {
		t.Errorf("1 ms db->app, nothing paired: %v", one[1])
	}
	b.Reset()
	if err := shaping.WriteVerifyJSON(&b, &shaping.Shaping{}, shaping.ShapeVerifyOptions{}, []shaping.ShapeRow{{NoShaper: true}}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"one_way": []`) || !strings.Contains(b.String(), `"one_way_method": ""`) {
		t.Errorf("without --one-way: %s", b.String())
	}
}

func TestOneWayLine(t *testing.T) {
	rows := oneWayRows()
	if got := oneWayLine(rows[0]); !strings.Contains(got, "app->db p50 0.020 (-) p99 0.070, 99.5% of 200 paired; db->app p50 0.020 (-)") {
		t.Errorf("reference row: %q", got)
	}
	got := oneWayLine(rows[1])
	if !strings.Contains(got, "app->db p50 0.520 (+0.500) p99 0.570") || !strings.Contains(got, "db->app none of 3 paired") {
		t.Errorf("1 ms row: %q", got)
	}
	rows[1].OneWay[0].Ambiguous, rows[1].OneWay[0].Drops, rows[1].OneWay[0].Truncated = 4, 2, true
	if got := oneWayLine(rows[1]); !strings.Contains(got, "(4 ambiguous, 2 dropped by the captures, capture cap hit)") {
		t.Errorf("notes: %q", got)
	}
	if got := oneWayLine(shaping.ShapeRow{}); got != "" {
		t.Errorf("no captures: %q", got)
	}
}
