package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// ManifestFile is every results folder's manifest: what ran, how, and
// (for the placement and worker studies) its kind.
const ManifestFile = "manifest.json"

// Limits on what a results folder's reader takes: a file read whole, the
// manifest, one line of a JSON-lines file. The full study writes 30 MB of
// samples in lines under 1 KiB.
const (
	MaxFile     = 256 << 20
	MaxManifest = 16 << 20
	MaxLine     = 1 << 20
)

// JSONErrPos returns "path:line" for a JSON decoding error of b that
// carries a byte offset (syntax and type errors, a truncated file), else
// path.
func JSONErrPos(path string, b []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return path
	}
	off = min(off, int64(len(b)))
	return fmt.Sprintf("%s:%d", path, 1+bytes.Count(b[:off], []byte{'\n'}))
}

// JSONWords words a JSON decoding error for the user: the field and the
// kind of value it wants, not the Go type it would fill.
func JSONWords(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		want := "a value of another kind"
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			want = "a whole number"
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			want = "a non-negative whole number"
		case reflect.Float32, reflect.Float64:
			want = "a number"
		case reflect.String:
			want = "a string"
		case reflect.Bool:
			want = "true or false"
		case reflect.Slice, reflect.Array:
			want = "a list"
		case reflect.Map, reflect.Struct:
			want = "an object"
		}
		field := te.Field
		if field == "" {
			field = "the document"
		}
		return fmt.Errorf("%s: a JSON %s where %s belongs", field, te.Value, want)
	case errors.As(err, &se):
		return fmt.Errorf("not valid JSON: %s", strings.TrimPrefix(se.Error(), "json: "))
	}
	return err
}

// CreateSynced writes b to a new file at path (refused when it exists)
// and fsyncs it.
func CreateSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// AppendJSONLine appends v to path (made if missing) as one JSON line and
// fsyncs the file, as every raw file of a results folder is written: a
// line on disk stays there through a crash.
func AppendJSONLine(path string, v any) error { return AppendJSONLines(path, []any{v}) }

// AppendJSONLines appends vs to path, one JSON line each, with one fsync
// for all of them (AppendSynced); nothing is written when one does not
// marshal.
func AppendJSONLines[T any](path string, vs []T) error {
	b, err := jsonLines(vs)
	if err != nil {
		return fmt.Errorf("append to %s: %w", filepath.Base(path), err)
	}
	return AppendSynced(path, b)
}

// TrimCutLine cuts a file after its last newline (a missing file is left
// alone), reading back from its end only as far as that newline.
func TrimCutLine(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for end := fi.Size(); end > 0; {
		n := int64(len(buf))
		if end < n {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return TrimTo(path, end-n+int64(i)+1)
		}
		end -= n
	}
	return TrimTo(path, 0)
}

// TrimTo truncates path to size bytes when it is longer, and fsyncs.
func TrimTo(path string, size int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() <= size {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("trim incomplete last line of %s: %w", filepath.Base(path), err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteJSON replaces dir/name with v as indented JSON and a newline, at
// once (WriteAtomic).
func WriteJSON(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteAtomic(dir, name, append(b, '\n'))
}

// WriteAtomic replaces dir/name with b: temporary file, fsync, rename,
// fsync of dir. Readers see the old or the new content, never a mix.
func WriteAtomic(dir, name string, b []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	cleanup := func() { tmp.Close(); os.Remove(tmp.Name()) }
	if _, err := tmp.Write(b); err != nil {
		cleanup()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		cleanup()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		cleanup()
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync folder %s: %w", dir, err)
	}
	return f.Close()
}
