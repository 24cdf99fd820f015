package workloads

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
)

// MixItem is one request type of a weighted mix. Path draws the concrete
// path from the run's random source, so that its parameters (offsets, IDs,
// search terms) are part of the seeded sequence.
type MixItem struct {
	Name   string
	Weight float64
	Path   func(r *rand.Rand) string
	// Method (GET when empty), Headers and Body of the item's requests;
	// a user's request_mix sets them, the built-in mixes only GET.
	Method  string
	Headers map[string]string
	Body    string
}

// Request draws one request of the item from r.
func (it MixItem) Request(r *rand.Rand) Request {
	return Request{Type: it.Name, Path: it.Path(r), Method: it.Method, Headers: it.Headers, Body: it.Body}
}

// Mix is a weighted set of request types, such as the Redmine or Aimeos
// browsing mixes.
type Mix struct {
	Name  string
	Items []MixItem
}

// Request is one drawn request of a mix sequence. Method (GET when
// empty), Headers and Body are left out of its JSON when empty, so a GET
// reads as it always has.
type Request struct {
	Type    string            `json:"type"`
	Path    string            `json:"path"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// mixStream is the PCG stream selector used for every mix sequence; the
// per-run seed is the PCG state seed.
const mixStream = 0x7274746c61622d6d // "rttlab-m"

// Validate checks that the mix has at least one item, that every item has a
// name, a path function and a finite non-negative weight, and that the
// weights do not sum to zero.
func (m Mix) Validate() error {
	if len(m.Items) == 0 {
		return fmt.Errorf("mix %q: no items", m.Name)
	}
	total := 0.0
	seen := make(map[string]bool, len(m.Items))
	for i, it := range m.Items {
		switch {
		case it.Name == "":
			return fmt.Errorf("mix %q: item %d has no name", m.Name, i)
		case seen[it.Name]:
			return fmt.Errorf("mix %q: duplicate item %q", m.Name, it.Name)
		case it.Path == nil:
			return fmt.Errorf("mix %q: item %q has no path function", m.Name, it.Name)
		case math.IsNaN(it.Weight) || math.IsInf(it.Weight, 0) || it.Weight < 0:
			return fmt.Errorf("mix %q: item %q has invalid weight %v", m.Name, it.Name, it.Weight)
		}
		seen[it.Name] = true
		total += it.Weight
	}
	if total <= 0 {
		return fmt.Errorf("mix %q: weights sum to zero", m.Name)
	}
	return nil
}

// Sequence draws n requests from the mix with a PCG generator seeded by
// seed: the same mix and seed always give the same sequence. Each draw
// picks an item with probability weight/sum(weights), then asks the item
// for its path with the same generator.
func Sequence(m Mix, seed uint64, n int) ([]Request, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("mix %q: negative request count %d", m.Name, n)
	}
	cum := make([]float64, len(m.Items))
	total := 0.0
	last := 0
	for i, it := range m.Items {
		total += it.Weight
		cum[i] = total
		if it.Weight > 0 {
			last = i
		}
	}
	r := rand.New(rand.NewPCG(seed, mixStream))
	out := make([]Request, n)
	for k := range out {
		u := r.Float64() * total
		idx := last
		for i, c := range cum {
			if u < c && m.Items[i].Weight > 0 {
				idx = i
				break
			}
		}
		it := m.Items[idx]
		req := it.Request(r)
		if !strings.HasPrefix(req.Path, "/") {
			return nil, fmt.Errorf("mix %q: item %q drew path %q without a leading /", m.Name, it.Name, req.Path)
		}
		out[k] = req
	}
	return out, nil
}

// Paths returns the paths of a request sequence, in order, ready for
// LoadOptions.Requests.
func Paths(reqs []Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Path
	}
	return out
}

// Redmine seed data sizes the mix assumes: 360 issues, listed 25 per page.
const (
	RedmineIssues      = 360
	RedminePageSize    = 25
	RedmineOffsetStep  = 5
	redmineOffsetCount = (RedmineIssues-RedminePageSize)/RedmineOffsetStep + 1 // offsets 0, 5, ..., 335
)

// RedmineMix returns the Redmine browsing mix: 60% issue list pages
// (/issues.json?limit=25&offset=K, K in 0, 5, ..., 335 so every page lies
// within the 360 seeded issues), 30% single issues with journals
// (/issues/ID.json?include=journals, ID in 1..360) and 10% the project list.
func RedmineMix() Mix {
	return Mix{
		Name: "redmine",
		Items: []MixItem{
			{Name: "issues-list", Weight: 0.6, Path: func(r *rand.Rand) string {
				off := RedmineOffsetStep * r.IntN(redmineOffsetCount)
				return "/issues.json?limit=" + strconv.Itoa(RedminePageSize) + "&offset=" + strconv.Itoa(off)
			}},
			{Name: "issue-detail", Weight: 0.3, Path: func(r *rand.Rand) string {
				return "/issues/" + strconv.Itoa(1+r.IntN(RedmineIssues)) + ".json?include=journals"
			}},
			{Name: "projects", Weight: 0.1, Path: func(*rand.Rand) string {
				return "/projects.json"
			}},
		},
	}
}

// AimeosSearchTerms are words from the names of the Aimeos demo catalog's
// products (aimeos-core setup/default/data/demo-product.php).
var AimeosSearchTerms = []string{
	"dress", "shirt", "t-shirt", "top", "tank", "black", "red", "grey",
	"cap", "women", "short", "gift", "fashion",
}

// AimeosProductPaths are placeholder detail paths for the 17 products of the
// Aimeos demo catalog, one per product code, slugged from the product's
// English name (or its url text where the demo data gives one). The real
// slugs are only known once the shop runs, so the orchestrator is expected
// to read them from the running shop and pass them in
// AimeosOptions.ProductPaths.
var AimeosProductPaths = []string{
	"/shop/dark-grey-dress",        // demo-article
	"/shop/red-t-shirt",            // demo-article-2
	"/shop/black-shirt-for-women",  // demo-article-3, also named "Black shirt"
	"/shop/demo-article-4",         // demo-article-4
	"/shop/short-sleeved-shirt",    // demo-article-5
	"/shop/sexy-top",               // demo-article-6
	"/shop/tank-top-in-black",      // demo-article-7
	"/shop/gift-certificate",       // demo-voucher
	"/shop/shirt-cap",              // demo-bundle-article
	"/shop/shirts-for-women",       // demo-group-article
	"/shop/demo-variant-article-1", // demo-selection-article-1
	"/shop/demo-variant-article-2", // demo-selection-article-2
	"/shop/demo-variant-article-3", // demo-selection-article-3
	"/shop/demo-variant-article-4", // demo-selection-article-4
	"/shop/black-shirt",            // demo-selection-article (url text "black-shirt")
	"/shop/fashion-week",           // demo-event-article
	"/shop/discount",               // demo-rebate
}

// AimeosOptions overrides the built-in Aimeos product paths and search
// terms; empty fields keep the defaults.
type AimeosOptions struct {
	ProductPaths []string
	SearchTerms  []string
}

// AimeosMix returns the Aimeos browsing mix: 60% product searches
// (/shop?f_search=TERM) and 40% product detail pages.
func AimeosMix(o AimeosOptions) (Mix, error) {
	paths := AimeosProductPaths
	if len(o.ProductPaths) > 0 {
		paths = o.ProductPaths
	}
	terms := AimeosSearchTerms
	if len(o.SearchTerms) > 0 {
		terms = o.SearchTerms
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") {
			return Mix{}, fmt.Errorf("aimeos product path %q must start with /", p)
		}
	}
	queries := make([]string, len(terms))
	for i, t := range terms {
		if strings.TrimSpace(t) == "" {
			return Mix{}, errors.New("aimeos search terms must not be empty")
		}
		queries[i] = "/shop?f_search=" + url.QueryEscape(t)
	}
	paths = append([]string(nil), paths...)
	return Mix{
		Name: "aimeos",
		Items: []MixItem{
			{Name: "product-search", Weight: 0.6, Path: func(r *rand.Rand) string {
				return queries[r.IntN(len(queries))]
			}},
			{Name: "product-detail", Weight: 0.4, Path: func(r *rand.Rand) string {
				return paths[r.IntN(len(paths))]
			}},
		},
	}, nil
}
