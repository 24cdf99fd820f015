package report

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rttlab/rttlab/rtt/raw"
)

func TestShaperRowsRoundTripAndDoneOnly(t *testing.T) {
	f, err := raw.Create(t.TempDir(), "shaper", time.Unix(0, 0))
	mustNoErr(t, err)
	rows := []raw.ShaperRow{
		{Task: 1, Attempt: 1, App: "go", Route: "/feed", RTTms: 0.75, Side: "app", Direction: "ingress", TargetUs: 375, Packets: 10, Drops: 3, HoldP50Us: 900},
		{Task: 1, Attempt: 2, App: "go", Route: "/feed", RTTms: 0.75, Side: "app", Direction: "ingress", TargetUs: 375, Packets: 400, HoldP50Us: 377, HoldP99Us: 420, CPUCores: 0.3},
		{Task: 2, Attempt: 1, App: "go", Route: "/feed", RTTms: 0.75, Side: "app", Direction: "ingress", TargetUs: 375, Packets: 300, HoldP50Us: 379, HoldP99Us: 450, CPUCores: 0.5},
		{Task: 3, Attempt: 1, App: "go", Route: "/feed", RTTms: 0.75, Side: "app", Direction: "ingress", TargetUs: 375, Packets: 5, HoldP50Us: 2000},
	}
	mustNoErr(t, f.AppendShaper(rows[:2]))
	mustNoErr(t, f.AppendShaper(rows[2:]))
	// A crash mid-write leaves an unterminated line: it is ignored.
	h, err := os.OpenFile(filepath.Join(f.Dir(), raw.ShaperFile), os.O_APPEND|os.O_WRONLY, 0)
	mustNoErr(t, err)
	_, _ = h.WriteString("4,1,go,/feed,0.75,app")
	h.Close()
	got, err := raw.LoadShaper(f.Dir())
	mustNoErr(t, err)
	if len(got) != 4 || got[1] != rows[1] {
		t.Fatalf("read back %d rows, second %+v", len(got), got[1])
	}
	// Task 1 counted attempt 2, task 2 attempt 1, task 3 is not done.
	st := AnalyzeShaper(got, map[int]int{1: 2, 2: 1})
	if len(st) != 1 {
		t.Fatalf("%d groups, want 1", len(st))
	}
	s := st[0]
	if s.Tasks != 2 || s.Packets != 700 || s.Drops != 0 || s.HoldP50Us != 378 || s.HoldP99Us != 450 || s.ErrorUs != 3 || s.CPUCores != 0.4 {
		t.Fatalf("stat %+v", s)
	}
}

// Rows written twice for one attempt (a run killed before marking it done
// hands the same attempt number out again): the last ones count, once.
func TestAnalyzeShaperKeepsTheLastRowsOfAnAttempt(t *testing.T) {
	rows := []raw.ShaperRow{
		{Task: 1, Attempt: 1, App: "go", RTTms: 1, Side: "db", TargetUs: 500, Packets: 90, HoldP50Us: 900},
		{Task: 1, Attempt: 1, App: "go", RTTms: 1, Side: "db", TargetUs: 500, Packets: 100, HoldP50Us: 502},
	}
	st := AnalyzeShaper(rows, map[int]int{1: 1})
	if len(st) != 1 || st[0].Tasks != 1 || st[0].Packets != 100 || st[0].HoldP50Us != 502 {
		t.Fatalf("%+v", st)
	}
}
