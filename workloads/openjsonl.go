package workloads

import (
	"fmt"
	"io"
)

// OpenResultWriter writes open-loop results as JSON lines, flushing each
// line. It is safe for concurrent use, and its Write method fits
// RunOpenLoop's emit parameter.
type OpenResultWriter struct{ lines *lineWriter }

// NewOpenResultWriter returns an OpenResultWriter on w.
func NewOpenResultWriter(w io.Writer) *OpenResultWriter { return &OpenResultWriter{newLineWriter(w)} }

// Write writes r as one JSON line and flushes it.
func (rw *OpenResultWriter) Write(r OpenResult) error { return rw.lines.write(r, r.Seq) }

// wireOpenResult mirrors OpenResult with pointers so that missing fields
// are seen.
type wireOpenResult struct {
	wireResult
	ScheduledNS *int64            `json:"scheduled_ns"`
	SentNS      *int64            `json:"sent_ns"`
	LagNS       *int64            `json:"lag_ns"`
	ServiceNS   *int64            `json:"service_ns"`
	TimedOut    bool              `json:"timed_out"`
	NewConn     bool              `json:"new_conn"`
	Tags        map[string]string `json:"tags"`
}

func decodeOpenResultLine(line []byte) (OpenResult, error) {
	var w wireOpenResult
	if err := decodeLine(line, &w); err != nil {
		return OpenResult{}, err
	}
	res, err := w.result()
	if err != nil {
		return OpenResult{}, err
	}
	if err := missingField(
		field{"scheduled_ns", w.ScheduledNS != nil}, field{"sent_ns", w.SentNS != nil},
		field{"lag_ns", w.LagNS != nil}, field{"service_ns", w.ServiceNS != nil},
	); err != nil {
		return OpenResult{}, err
	}
	if *w.ScheduledNS < 0 || *w.SentNS < 0 || *w.ServiceNS < 0 {
		return OpenResult{}, fmt.Errorf("negative time (scheduled_ns %d, sent_ns %d, service_ns %d)", *w.ScheduledNS, *w.SentNS, *w.ServiceNS)
	}
	return OpenResult{
		Result: res, ScheduledNS: *w.ScheduledNS, SentNS: *w.SentNS, LagNS: *w.LagNS,
		ServiceNS: *w.ServiceNS, TimedOut: w.TimedOut, NewConn: w.NewConn, Tags: w.Tags,
	}, nil
}

// DecodeOpenResultStream reads JSON-lines open-loop results from r and
// calls fn for each, in order. Blank lines are skipped. A malformed line
// stops the stream with a *LineError; an error from fn stops it too.
func DecodeOpenResultStream(r io.Reader, fn func(OpenResult) error) error {
	return decodeLines(r, decodeOpenResultLine, fn)
}

// DecodeOpenResults reads a whole JSON-lines open-loop result stream.
func DecodeOpenResults(r io.Reader) ([]OpenResult, error) {
	return decodeAll(r, decodeOpenResultLine)
}
