package workloads

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// MixRequest is one request type of a user's weighted mix (a plan
// entry's request_mix): a fixed request drawn with probability
// Weight/sum(weights).
type MixRequest struct {
	// Name is the request type: its own row in trace and verify.
	Name string `yaml:"name" json:"name"`
	// Method is GET when empty; see MixMethods.
	Method  string            `yaml:"method,omitempty" json:"method,omitempty"`
	Path    string            `yaml:"path" json:"path"`
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	Body    string            `yaml:"body,omitempty" json:"body,omitempty"`
	Weight  float64           `yaml:"weight" json:"weight"`
}

// MixMethods are the methods a request_mix may send.
var MixMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead}

// method is the request's method in upper case, GET when empty.
func (q MixRequest) method() string {
	if q.Method == "" {
		return http.MethodGet
	}
	return strings.ToUpper(q.Method)
}

// Check returns the field of the request at fault ("method", "path",
// "weight", "headers", "body") and why; "" and nil when it is sound.
// Names (empty, duplicate) are the mix's to check.
func (q MixRequest) Check() (field string, err error) {
	m, pathErr := q.method(), CheckPath(q.Path)
	switch {
	case !slices.Contains(MixMethods, m):
		return "method", fmt.Errorf("method %q is unknown: use %s", q.Method, strings.Join(MixMethods, ", "))
	case pathErr != nil:
		return "path", pathErr
	case math.IsNaN(q.Weight) || math.IsInf(q.Weight, 0) || q.Weight <= 0:
		return "weight", fmt.Errorf("weight %v must be a finite number above 0", q.Weight)
	case q.Body != "" && (m == http.MethodGet || m == http.MethodHead):
		return "body", fmt.Errorf("a %s request has no body: use POST, PUT, PATCH or DELETE to send one", m)
	}
	for _, k := range slices.Sorted(maps.Keys(q.Headers)) {
		if !httpguts.ValidHeaderFieldName(k) {
			return "headers", fmt.Errorf("header name %q is not a valid HTTP header name", k)
		}
		if !httpguts.ValidHeaderFieldValue(q.Headers[k]) {
			return "headers", fmt.Errorf("header %s: the value holds a line break or control character", k)
		}
	}
	return "", nil
}

// CheckMixRequests checks a user's mix: at least one request, names
// present and unique, each request sound. On error, index is the
// request at fault (-1 for the mix as a whole) and field its field.
func CheckMixRequests(reqs []MixRequest) (index int, field string, err error) {
	if len(reqs) == 0 {
		return -1, "", fmt.Errorf("request_mix has no requests: give at least one (name, path, weight)")
	}
	seen := make(map[string]bool, len(reqs))
	for i, q := range reqs {
		switch {
		case strings.TrimSpace(q.Name) == "":
			return i, "name", fmt.Errorf("request %d has no name", i+1)
		case seen[q.Name]:
			return i, "name", fmt.Errorf("request name %q is used twice", q.Name)
		}
		seen[q.Name] = true
		if f, err := q.Check(); err != nil {
			return i, f, fmt.Errorf("request %s: %w", q.Name, err)
		}
	}
	return -1, "", nil
}

// RequestMix builds the weighted mix of a user's requests. Each draw of
// its Sequence takes one number from the generator, as a built-in mix
// item with a fixed path does.
func RequestMix(name string, reqs []MixRequest) (Mix, error) {
	if _, _, err := CheckMixRequests(reqs); err != nil {
		return Mix{}, fmt.Errorf("mix %q: %w", name, err)
	}
	m := Mix{Name: name, Items: make([]MixItem, len(reqs))}
	for i, q := range reqs {
		path := q.Path
		method := q.method()
		if method == http.MethodGet {
			method = "" // a GET reads as it always has
		}
		m.Items[i] = MixItem{Name: q.Name, Weight: q.Weight, Path: func(*rand.Rand) string { return path },
			Method: method, Headers: q.Headers, Body: q.Body}
	}
	return m, nil
}
