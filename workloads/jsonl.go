package workloads

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// maxResultLine bounds one JSON line of the result stream.
const maxResultLine = 1 << 20

// ResultWriter writes results as JSON lines. Each Write flushes its line to
// the underlying writer, so results stream back over docker exec as they
// happen. Its Write method fits RunLoad's emit parameter.
type ResultWriter struct{ lines *lineWriter }

// NewResultWriter returns a ResultWriter on w.
func NewResultWriter(w io.Writer) *ResultWriter { return &ResultWriter{newLineWriter(w)} }

// Write writes r as one JSON line and flushes it.
func (rw *ResultWriter) Write(r Result) error { return rw.lines.write(r, r.Seq) }

// lineWriter writes values as JSON lines, flushing each; it is safe for
// concurrent use.
type lineWriter struct {
	mu  sync.Mutex
	bw  *bufio.Writer
	enc *json.Encoder
}

func newLineWriter(w io.Writer) *lineWriter {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &lineWriter{bw: bw, enc: enc}
}

// write writes v (the result numbered seq) as one line and flushes it.
func (lw *lineWriter) write(v any, seq int) error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if err := lw.enc.Encode(v); err != nil {
		return fmt.Errorf("encode result %d: %w", seq, err)
	}
	if err := lw.bw.Flush(); err != nil {
		return fmt.Errorf("write result %d: %w", seq, err)
	}
	return nil
}

// LineError reports a malformed line of a result stream.
type LineError struct {
	Line int    // 1-based line number
	Text string // the line, cut to 200 bytes
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("result stream line %d: %v (line: %q)", e.Line, e.Err, e.Text)
}

func (e *LineError) Unwrap() error { return e.Err }

// wireResult mirrors Result with pointers so that missing fields are seen.
type wireResult struct {
	Seq       *int    `json:"seq"`
	Warmup    *bool   `json:"warmup"`
	Path      *string `json:"path"`
	LatencyNS *int64  `json:"latency_ns"`
	Status    *int    `json:"status"`
	Bytes     *int64  `json:"bytes"`
	Error     *string `json:"error"`
	Retried   bool    `json:"retried"`
}

func decodeResultLine(line []byte) (Result, error) {
	var w wireResult
	if err := decodeLine(line, &w); err != nil {
		return Result{}, err
	}
	return w.result()
}

// decodeLine decodes the one JSON object of a line into v: an unknown
// field, or anything after the object, is an error.
func decodeLine(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// result checks that every field of a decoded line was present and valid
// and returns the Result.
func (w wireResult) result() (Result, error) {
	if err := missingField(
		field{"seq", w.Seq != nil}, field{"warmup", w.Warmup != nil}, field{"path", w.Path != nil},
		field{"latency_ns", w.LatencyNS != nil}, field{"status", w.Status != nil},
		field{"bytes", w.Bytes != nil}, field{"error", w.Error != nil},
	); err != nil {
		return Result{}, err
	}
	switch {
	case *w.Seq < 0:
		return Result{}, fmt.Errorf("negative seq %d", *w.Seq)
	case *w.LatencyNS < 0:
		return Result{}, fmt.Errorf("negative latency_ns %d", *w.LatencyNS)
	}
	return Result{
		Seq: *w.Seq, Warmup: *w.Warmup, Path: *w.Path, LatencyNS: *w.LatencyNS,
		Status: *w.Status, Bytes: *w.Bytes, Error: *w.Error, Retried: w.Retried,
	}, nil
}

// field is a field of a decoded line: its JSON name and whether the line
// had it.
type field struct {
	name    string
	present bool
}

// missingField names the first of fields the line lacked; nil when it had
// them all.
func missingField(fields ...field) error {
	for _, f := range fields {
		if !f.present {
			return fmt.Errorf("missing field %q", f.name)
		}
	}
	return nil
}

// DecodeResultStream reads JSON-lines results from r and calls fn for each,
// in order. Blank lines are skipped. A malformed line stops the stream with
// a *LineError naming its line number; an error from fn stops it too.
func DecodeResultStream(r io.Reader, fn func(Result) error) error {
	return decodeLines(r, decodeResultLine, fn)
}

// decodeLines reads a JSON-lines stream from r, decodes each non-blank line
// with decode and calls fn with the value, in order. A line decode rejects
// stops the stream with a *LineError; an error from fn stops it too.
func decodeLines[T any](r io.Reader, decode func([]byte) (T, error), fn func(T) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxResultLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		res, err := decode(b)
		if err != nil {
			text := b
			if len(text) > 200 {
				text = text[:200]
			}
			return &LineError{Line: line, Text: string(text), Err: err}
		}
		if err := fn(res); err != nil {
			return fmt.Errorf("result stream line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return &LineError{Line: line + 1, Err: err}
	}
	return nil
}

// DecodeResults reads a whole JSON-lines result stream.
func DecodeResults(r io.Reader) ([]Result, error) { return decodeAll(r, decodeResultLine) }

// decodeAll reads a whole stream as decodeLines does, keeping every line's
// value in order.
func decodeAll[T any](r io.Reader, decode func([]byte) (T, error)) ([]T, error) {
	var out []T
	err := decodeLines(r, decode, func(v T) error {
		out = append(out, v)
		return nil
	})
	return out, err
}
