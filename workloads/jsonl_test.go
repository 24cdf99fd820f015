package workloads

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestResultJSONShape(t *testing.T) {
	var buf bytes.Buffer
	r := Result{Seq: 0, Warmup: true, Path: "/feed", LatencyNS: 123, Status: 200, Bytes: 456}
	if err := NewResultWriter(&buf).Write(r); err != nil {
		t.Fatal(err)
	}
	want := `{"seq":0,"warmup":true,"path":"/feed","latency_ns":123,"status":200,"bytes":456,"error":""}` + "\n"
	if buf.String() != want {
		t.Errorf("line = %s want %s", buf.String(), want)
	}
}

func TestResultStreamRoundTrip(t *testing.T) {
	in := []Result{
		{Seq: 0, Warmup: true, Path: "/feed", LatencyNS: 123, Status: 200, Bytes: 456},
		{Seq: 1, Path: "/issues.json?limit=25&offset=5", LatencyNS: 98765, Status: 500, Bytes: 4, Error: "unexpected status 500"},
		{Seq: 2, Path: "/x<y>&\"z\"", LatencyNS: 1, Error: "read tcp: connection reset by peer\n\x00", Retried: true},
	}
	var streamed bytes.Buffer
	rw := NewResultWriter(&streamed)
	for _, r := range in {
		if err := rw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(streamed.String(), "\n"); n != len(in) {
		t.Errorf("%d lines for %d results", n, len(in))
	}
	out, err := DecodeResults(&streamed)
	if err != nil {
		t.Fatalf("DecodeResults: %v", err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
}

func TestDecodeResultsReportsMalformedLine(t *testing.T) {
	good := `{"seq":0,"warmup":false,"path":"/","latency_ns":5,"status":200,"bytes":1,"error":""}`
	cases := map[string]struct {
		stream string
		line   int
	}{
		"not json":         {good + "\n" + good + "\nrttlab: something logged\n" + good + "\n", 3},
		"truncated object": {good + "\n" + `{"seq":1,"warmup":false,"path":"/"` + "\n", 2},
		"missing field":    {`{"seq":0,"warmup":false,"path":"/","status":200,"bytes":1,"error":""}` + "\n", 1},
		"unknown field":    {good + "\n\n" + `{"seq":1,"warmup":false,"path":"/","latency_ns":5,"status":200,"bytes":1,"error":"","level":"INFO"}`, 3},
		"trailing data":    {good + " {}\n", 1},
		"wrong type":       {good + "\n" + `{"seq":"1","warmup":false,"path":"/","latency_ns":5,"status":200,"bytes":1,"error":""}`, 2},
		"negative latency": {`{"seq":0,"warmup":false,"path":"/","latency_ns":-5,"status":200,"bytes":1,"error":""}`, 1},
		"line too long":    {good + "\n" + strings.Repeat("x", maxResultLine+10) + "\n", 2},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeResults(strings.NewReader(c.stream))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LineError", err)
			}
			if le.Line != c.line {
				t.Errorf("line %d, want %d (%v)", le.Line, c.line, err)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("message %q does not name the line", err)
			}
		})
	}
}

func TestDecodeResultsSkipsBlankLines(t *testing.T) {
	s := "\n" + `{"seq":0,"warmup":false,"path":"/","latency_ns":5,"status":200,"bytes":1,"error":""}` + "\n  \n"
	out, err := DecodeResults(strings.NewReader(s))
	if err != nil || len(out) != 1 {
		t.Fatalf("got %v, %v", out, err)
	}
}

// TestRunLoadStreamsJSONLines runs the load client into a ResultWriter, as
// the agent command does, and reads the stream back.
func TestRunLoadStreamsJSONLines(t *testing.T) {
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "body")
	}))
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var got []Result
	go func() { done <- DecodeResultStream(pr, func(r Result) error { got = append(got, r); return nil }) }()

	rw := NewResultWriter(pw)
	tot, err := RunLoad(context.Background(), LoadOptions{
		BaseURL: srv.URL, Requests: []string{"/a", "/fail", "/b", "/c"}, Warmup: 1,
	}, rw.Write)
	_ = pw.Close()
	if err != nil {
		t.Fatalf("RunLoad: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(got) != tot.Requests || tot.Requests != 4 || tot.Failures != 1 {
		t.Fatalf("decoded %d results, totals %+v", len(got), tot)
	}
	if !got[0].Warmup || got[1].Status != 503 || !got[1].Failed() || got[3].Path != "/c" {
		t.Errorf("decoded %+v", got)
	}
}
