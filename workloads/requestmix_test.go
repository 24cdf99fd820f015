package workloads

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func shopMix(t *testing.T) Mix {
	t.Helper()
	m, err := RequestMix("shop", []MixRequest{
		{Name: "list", Path: "/api/items", Weight: 6},
		{Name: "create", Method: "post", Path: "/api/items", Weight: 1,
			Headers: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer t0ken"}, Body: `{"name": "widget"}`},
		{Name: "remove", Method: "DELETE", Path: "/api/items/1", Weight: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A GET's JSON line is what it always was; the other fields travel when set.
func TestRequestJSON(t *testing.T) {
	b, _ := json.Marshal(Request{Type: "list", Path: "/api/items"})
	if string(b) != `{"type":"list","path":"/api/items"}` {
		t.Errorf("GET line %s", b)
	}
	in := Request{Type: "create", Path: "/api/items", Method: "POST", Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"a":1}`}
	b, _ = json.Marshal(in)
	var out Request
	if err := json.Unmarshal(b, &out); err != nil || !reflect.DeepEqual(in, out) {
		t.Errorf("round trip %s -> %+v (%v)", b, out, err)
	}
}

// A user's mix draws from the same PCG stream as the built-in mixes: one
// number per request, the item picked by its cumulative weight.
func TestRequestMixSequence(t *testing.T) {
	m := shopMix(t)
	const n = 10000
	a, err := Sequence(m, 7, n)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Sequence(m, 7, n)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different sequences")
	}
	r := rand.New(rand.NewPCG(7, mixStream))
	counts := map[string]int{}
	for i, q := range a {
		u := r.Float64() * 10
		want := "list"
		switch {
		case u >= 7:
			want = "remove"
		case u >= 6:
			want = "create"
		}
		if q.Type != want {
			t.Fatalf("request %d is %s, want %s", i, q.Type, want)
		}
		counts[q.Type]++
	}
	for name, p := range map[string]float64{"list": 0.6, "create": 0.1, "remove": 0.3} {
		if got := float64(counts[name]) / n; math.Abs(got-p) > 0.02 {
			t.Errorf("%s: share %.4f, want %.2f", name, got, p)
		}
	}
	for _, q := range a {
		switch q.Type {
		case "list":
			if q.Method != "" || q.Headers != nil || q.Body != "" {
				t.Errorf("list %+v", q)
			}
		case "create":
			if q.Method != "POST" || q.Headers["Authorization"] != "Bearer t0ken" || q.Body != `{"name": "widget"}` {
				t.Errorf("create %+v", q)
			}
		}
	}
}

func TestCheckMixRequests(t *testing.T) {
	ok := MixRequest{Name: "a", Path: "/a", Weight: 1}
	for name, c := range map[string]struct {
		reqs  []MixRequest
		index int
		field string
		want  string
	}{
		"empty":       {nil, -1, "", "no requests"},
		"no name":     {[]MixRequest{ok, {Path: "/b", Weight: 1}}, 1, "name", "request 2 has no name"},
		"duplicate":   {[]MixRequest{ok, ok}, 1, "name", `request name "a" is used twice`},
		"method":      {[]MixRequest{{Name: "a", Method: "FETCH", Path: "/a", Weight: 1}}, 0, "method", `method "FETCH" is unknown`},
		"path":        {[]MixRequest{{Name: "a", Path: "a", Weight: 1}}, 0, "path", `path "a" must start with /`},
		"zero weight": {[]MixRequest{{Name: "a", Path: "/a"}}, 0, "weight", "weight 0 must be"},
		"nan weight":  {[]MixRequest{{Name: "a", Path: "/a", Weight: math.NaN()}}, 0, "weight", "weight NaN must be"},
		"inf weight":  {[]MixRequest{{Name: "a", Path: "/a", Weight: math.Inf(1)}}, 0, "weight", "weight +Inf must be"},
		"header name": {[]MixRequest{{Name: "a", Path: "/a", Weight: 1, Headers: map[string]string{"Bad Name": "x"}}}, 0, "headers", `header name "Bad Name"`},
		"header val":  {[]MixRequest{{Name: "a", Path: "/a", Weight: 1, Headers: map[string]string{"X-A": "x\ny"}}}, 0, "headers", "line break"},
		"get body":    {[]MixRequest{{Name: "a", Path: "/a", Weight: 1, Body: "x"}}, 0, "body", "a GET request has no body"},
		"head body":   {[]MixRequest{{Name: "a", Method: "HEAD", Path: "/a", Weight: 1, Body: "x"}}, 0, "body", "a HEAD request has no body"},
	} {
		i, f, err := CheckMixRequests(c.reqs)
		if err == nil || !strings.Contains(err.Error(), c.want) || i != c.index || f != c.field {
			t.Errorf("%s: %d %q %v, want %d %q %q", name, i, f, err, c.index, c.field, c.want)
		}
	}
	if _, _, err := CheckMixRequests([]MixRequest{ok, {Name: "b", Method: "put", Path: "/b", Weight: 0.5, Body: "x"}}); err != nil {
		t.Error(err)
	}
}

// The load client and the trace client send each request's method,
// headers and body; the run's headers stay on every request.
func TestRunLoadSendsMethodHeadersBody(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+r.Header.Get("X-Run")+" "+string(body))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	calls, err := Sequence(shopMix(t), 3, 12)
	if err != nil {
		t.Fatal(err)
	}
	var rs []Result
	tot, err := RunLoad(context.Background(), LoadOptions{BaseURL: srv.URL, Calls: calls, Warmup: 2, Header: map[string]string{"X-Run": "r1"}}, collect(&rs))
	if err != nil || tot.Failures != 0 || tot.Measured != 10 || tot.NewConns != 1 {
		t.Fatalf("totals %+v err %v", tot, err)
	}
	want := map[string]string{"list": "GET /api/items  r1 ", "create": `POST /api/items Bearer t0ken r1 {"name": "widget"}`, "remove": "DELETE /api/items/1  r1 "}
	for i, c := range calls {
		if got[i] != want[c.Type] || rs[i].Path != c.Path {
			t.Errorf("request %d (%s): server saw %q, result %+v", i, c.Type, got[i], rs[i])
		}
	}
	if _, err := RunLoad(context.Background(), LoadOptions{BaseURL: srv.URL, Calls: calls, Warmup: 2, Measured: 3}, nil); err == nil {
		t.Error("a measured count that disagrees with the calls must be refused")
	}
}
