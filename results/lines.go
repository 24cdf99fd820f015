package results

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/rttlab/rttlab/internal/capped"
)

// Lines is what ReadJSONLines read of a JSON-lines file: the length of
// its complete lines and the unterminated last line a crash mid-write
// leaves (nil when the file ends with a newline).
type Lines struct {
	Complete int64
	Cut      []byte
	Count    int
}

// ReadJSONLines calls fn with each '\n'-terminated line of path (without
// the newline) and its 1-based number, and returns what it read. An
// unterminated last line is not passed to fn: it is the cut line of an
// interrupted write, which the writer trims before it appends again
// (TrimCutLine). An empty line, a line over max bytes or an error of fn is
// an error naming file and line. A missing file reads as empty when
// missingOK.
func ReadJSONLines(path, name string, max int, missingOK bool, fn func(line int, b []byte) error) (Lines, error) {
	var l Lines
	f, err := capped.Open(path, name)
	if missingOK && errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, err
	}
	defer f.Close()
	r := capped.NewLines(f, max)
	for {
		b, rerr := r.Next()
		if errors.Is(rerr, capped.ErrLineTooLong) {
			return l, fmt.Errorf("%s:%d: %w: not a line rttlab wrote", path, l.Count+1, rerr)
		}
		if len(b) > 0 && b[len(b)-1] == '\n' {
			l.Count++
			l.Complete += int64(len(b))
			body := b[:len(b)-1]
			if len(bytes.TrimSpace(body)) == 0 {
				return l, fmt.Errorf("%s:%d: empty line", path, l.Count)
			}
			if err := fn(l.Count, body); err != nil {
				return l, fmt.Errorf("%s:%d: %w", path, l.Count, err)
			}
		} else if len(b) > 0 {
			l.Cut = append([]byte(nil), b...)
		}
		if rerr == io.EOF {
			return l, nil
		}
		if rerr != nil {
			return l, fmt.Errorf("read %s: %w", path, rerr)
		}
	}
}

// ReadCSV calls fn with each row after the header of the CSV file path
// and its 1-based line number. The header must be header, or one of
// older (the layouts earlier folders were written with; fn tells them by
// the row's length); a missing file reads as empty; an unterminated last
// line (a crash mid-write) is left out, as the writer trims it before it
// appends again. A malformed row is an error naming file and line.
func ReadCSV(path, name string, header []string, fn func(line int, rec []string) error, older ...[]string) error {
	b, err := capped.ReadFile(path, name, MaxFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	r := csv.NewReader(bytes.NewReader(b))
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if line == 1 {
			if !slices.Equal(rec, header) && !slices.ContainsFunc(older, func(h []string) bool { return slices.Equal(rec, h) }) {
				return fmt.Errorf("%s:1: unexpected header %q", path, strings.Join(rec, ","))
			}
			continue
		}
		if err := fn(line, rec); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
}
