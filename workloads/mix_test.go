package workloads

import (
	"math"
	"math/rand/v2"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestSequenceHonoursWeights(t *testing.T) {
	aimeos, err := AimeosMix(AimeosOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10000
	for _, m := range []Mix{RedmineMix(), aimeos} {
		t.Run(m.Name, func(t *testing.T) {
			reqs, err := Sequence(m, 42, n)
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != n {
				t.Fatalf("%d requests, want %d", len(reqs), n)
			}
			counts := map[string]int{}
			for _, r := range reqs {
				counts[r.Type]++
			}
			total := 0.0
			for _, it := range m.Items {
				total += it.Weight
			}
			for _, it := range m.Items {
				p := it.Weight / total
				got := float64(counts[it.Name]) / n
				// 0.02 is over four binomial standard deviations at n=10,000.
				if math.Abs(got-p) > 0.02 {
					t.Errorf("%s: share %.4f, want %.2f ± 0.02", it.Name, got, p)
				}
			}
		})
	}
}

func TestSequenceIsSeeded(t *testing.T) {
	m := RedmineMix()
	a, _ := Sequence(m, 7, 500)
	b, _ := Sequence(m, 7, 500)
	c, _ := Sequence(m, 8, 500)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed gave different sequences")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds gave the same sequence")
	}
	// A prefix of a longer sequence is the shorter sequence.
	d, _ := Sequence(m, 7, 100)
	if !reflect.DeepEqual(a[:100], d) {
		t.Error("sequence of 100 is not the prefix of the sequence of 500")
	}
}

func TestRedmineMixPaths(t *testing.T) {
	reqs, err := Sequence(RedmineMix(), 1, 5000)
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[int]bool{}
	ids := map[int]bool{}
	for _, r := range reqs {
		u, err := url.Parse(r.Path)
		if err != nil {
			t.Fatalf("%s: %v", r.Path, err)
		}
		q := u.Query()
		switch r.Type {
		case "issues-list":
			off, err := strconv.Atoi(q.Get("offset"))
			if u.Path != "/issues.json" || q.Get("limit") != "25" || err != nil ||
				off < 0 || off+RedminePageSize > RedmineIssues || off%RedmineOffsetStep != 0 {
				t.Fatalf("bad list path %s", r.Path)
			}
			offsets[off] = true
		case "issue-detail":
			id, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(u.Path, "/issues/"), ".json"))
			if err != nil || id < 1 || id > RedmineIssues || q.Get("include") != "journals" {
				t.Fatalf("bad issue path %s", r.Path)
			}
			ids[id] = true
		case "projects":
			if r.Path != "/projects.json" {
				t.Fatalf("bad projects path %s", r.Path)
			}
		default:
			t.Fatalf("unknown type %q", r.Type)
		}
	}
	if !offsets[0] || !offsets[335] || len(offsets) != 68 {
		t.Errorf("offsets drawn: %d distinct, 0 %v, 335 %v; want all 68 from 0 to 335", len(offsets), offsets[0], offsets[335])
	}
	if !ids[1] || !ids[RedmineIssues] || len(ids) < 300 {
		t.Errorf("issue IDs drawn: %d distinct, 1 %v, 360 %v", len(ids), ids[1], ids[RedmineIssues])
	}
}

func TestAimeosMix(t *testing.T) {
	if len(AimeosProductPaths) != 17 {
		t.Errorf("%d placeholder product paths, want 17", len(AimeosProductPaths))
	}
	m, err := AimeosMix(AimeosOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := Sequence(m, 3, 2000)
	for _, r := range reqs {
		switch r.Type {
		case "product-search":
			u, err := url.Parse(r.Path)
			if err != nil || u.Path != "/shop" || u.Query().Get("f_search") == "" {
				t.Fatalf("bad search path %s", r.Path)
			}
		case "product-detail":
			if !strings.HasPrefix(r.Path, "/shop/") {
				t.Fatalf("bad detail path %s", r.Path)
			}
		}
	}

	over, err := AimeosMix(AimeosOptions{ProductPaths: []string{"/shop/only"}, SearchTerms: []string{"grey dress"}})
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ = Sequence(over, 3, 200)
	for _, r := range reqs {
		if r.Path != "/shop/only" && r.Path != "/shop?f_search=grey+dress" {
			t.Fatalf("override ignored: %s", r.Path)
		}
	}
	if _, err := AimeosMix(AimeosOptions{ProductPaths: []string{"shop/x"}}); err == nil {
		t.Error("a product path without / was accepted")
	}
	if _, err := AimeosMix(AimeosOptions{SearchTerms: []string{" "}}); err == nil {
		t.Error("a blank search term was accepted")
	}
}

func TestSequenceRejectsBadMixes(t *testing.T) {
	p := func(*rand.Rand) string { return "/" }
	cases := map[string]Mix{
		"empty":           {Name: "m"},
		"zero weights":    {Name: "m", Items: []MixItem{{Name: "a", Weight: 0, Path: p}}},
		"negative weight": {Name: "m", Items: []MixItem{{Name: "a", Weight: -1, Path: p}, {Name: "b", Weight: 2, Path: p}}},
		"NaN weight":      {Name: "m", Items: []MixItem{{Name: "a", Weight: math.NaN(), Path: p}}},
		"no path":         {Name: "m", Items: []MixItem{{Name: "a", Weight: 1}}},
		"no name":         {Name: "m", Items: []MixItem{{Weight: 1, Path: p}}},
		"duplicate":       {Name: "m", Items: []MixItem{{Name: "a", Weight: 1, Path: p}, {Name: "a", Weight: 1, Path: p}}},
		"relative path":   {Name: "m", Items: []MixItem{{Name: "a", Weight: 1, Path: func(*rand.Rand) string { return "x" }}}},
	}
	for name, m := range cases {
		if _, err := Sequence(m, 1, 10); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Sequence(RedmineMix(), 1, -1); err == nil {
		t.Error("negative count accepted")
	}
}

func TestSequenceSkipsZeroWeightItems(t *testing.T) {
	m := Mix{Name: "m", Items: []MixItem{
		{Name: "never", Weight: 0, Path: func(*rand.Rand) string { return "/never" }},
		{Name: "always", Weight: 1, Path: func(*rand.Rand) string { return "/always" }},
		{Name: "never2", Weight: 0, Path: func(*rand.Rand) string { return "/never2" }},
	}}
	reqs, err := Sequence(m, 9, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if r.Type != "always" {
			t.Fatalf("drew zero-weight item %q", r.Type)
		}
	}
	if got := Paths(reqs[:2]); !reflect.DeepEqual(got, []string{"/always", "/always"}) {
		t.Errorf("Paths = %v", got)
	}
}
