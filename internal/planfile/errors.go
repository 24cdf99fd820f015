package planfile

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Errorf is "file:line: message", the line that of the field at path
// ("file: message" when the document does not have it).
func (d *Doc) Errorf(path, format string, a ...any) error {
	return d.at(d.Line(path), fmt.Sprintf(format, a...))
}

// Place turns a FieldError (anywhere in err's chain) into "file:line:
// message"; any other error becomes "file: message".
func (d *Doc) Place(err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return d.at(d.Line(fe.Path), err.Error())
	}
	return d.at(0, err.Error())
}

func (d *Doc) at(line int, msg string) error { return ErrorAt(d.File, line, msg) }

// ErrorAt is "file:line: message", or "file: message" when the line is
// not known (0): how every plan error names its place.
func ErrorAt(file string, line int, msg string) error {
	if line > 0 {
		return fmt.Errorf("%s:%d: %s", file, line, msg)
	}
	return fmt.Errorf("%s: %s", file, msg)
}

// FieldError is a bad value of the field at Path (as Doc.Line takes it);
// its message is Err's. Validation returns it so that a plan read from a
// file gets the line, while one built by flags gets the same words.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// At is a FieldError for path with a formatted message.
func At(path, format string, a ...any) error {
	return &FieldError{Path: path, Err: fmt.Errorf(format, a...)}
}

// decodeError turns a YAML decoder error into "file:line: what", in the
// plan's words: an unknown field lists the known ones, a value of the
// wrong kind says what kind was expected, a number too large for its
// field says so.
func decodeError(file string, data []byte, err error, t reflect.Type, s Schema) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.Join(strings.Fields(strings.TrimPrefix(msg, "yaml: ")), " ")
	msg = strings.TrimPrefix(msg, "unmarshal errors: ")
	line := ""
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, msg = ":"+m[1], m[2]
	}
	if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("unknown field %q", m[1])
		if w := s.Where[m[2]]; w != "" {
			msg += " " + w
		}
		if keys := typeKeys(t)[m[2]]; len(keys) > 0 {
			msg += " (known: " + strings.Join(keys, ", ") + ")"
		}
	} else if m := wrongTypeRE.FindStringSubmatch(msg); m != nil {
		msg = wrongKind(m[1], m[2], m[3], s)
	} else if words := syntaxWords(msg); words != msg {
		msg = words
		if n, err := strconv.Atoi(strings.TrimPrefix(line, ":")); err == nil {
			line = ":" + strconv.Itoa(openerLine(data, n))
		}
	}
	return fmt.Errorf("%s%s: %s", file, line, msg)
}

// openerLine is the line of the unclosed [ or { the parser stopped at:
// the parser names the line before the one that holds it when the
// bracket opens a field's value on a line of its own, so the first line
// from the named one on whose brackets do not balance.
func openerLine(data []byte, line int) int {
	lines := strings.Split(string(data), "\n")
	for i := line - 1; i >= 0 && i < len(lines) && i <= line; i++ {
		l := lines[i]
		if strings.Count(l, "[")+strings.Count(l, "{") > strings.Count(l, "]")+strings.Count(l, "}") {
			return i + 1
		}
	}
	return line
}

// wrongKind says what a value of YAML tag tag (and text value) is not.
func wrongKind(tag, value, goType string, s Schema) string {
	got := map[string]string{"seq": "a list", "map": "a mapping"}[tag]
	if got == "" {
		got = tag
	}
	if value != "" {
		got = fmt.Sprintf("%q", value)
	} else if tag == "str" {
		got = "an empty value"
	}
	bare := strings.TrimLeft(goType, "*")
	digits := strings.TrimSuffix(strings.TrimPrefix(value, "-"), "...")
	if (tag == "int" || tag == "float") && bigNumberRE.MatchString(value) && isInteger(bare) &&
		(strings.HasSuffix(value, "...") || len(digits) > maxDigits(bare)) {
		return fmt.Sprintf("%s is too large: give a whole number of at most %d digits", got, maxDigits(bare))
	}
	return fmt.Sprintf("%s is not %s", got, kindWords(bare, s))
}

var bigNumberRE = regexp.MustCompile(`^-?[0-9]+(\.\.\.)?$`)

// maxDigits is how many decimal digits always fit an integer type.
func maxDigits(goType string) int {
	switch goType {
	case "int8", "uint8":
		return 2
	case "int16", "uint16":
		return 4
	case "int32", "uint32":
		return 9
	case "uint64", "uint":
		return 19
	}
	return 18
}

func isInteger(goType string) bool {
	switch goType {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return true
	}
	return false
}

// kindWords names a Go type the way a plan's reader knows it.
func kindWords(goType string, s Schema) string {
	if w, ok := s.Kinds[goType]; ok {
		return w
	}
	switch {
	case strings.HasPrefix(goType, "[]"):
		switch goType[2:] {
		case "string":
			return "a list of strings"
		case "float64":
			return "a list of numbers"
		case "int":
			return "a list of whole numbers"
		}
		return "a list"
	case strings.HasPrefix(goType, "map["):
		if goType == "map[string]string" {
			return "a mapping of strings"
		}
		return "a mapping"
	case goType == "float64" || goType == "float32":
		return "a number"
	case strings.HasPrefix(goType, "uint"):
		return "a non-negative whole number"
	case strings.HasPrefix(goType, "int"):
		return "a whole number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a string"
	}
	return "a mapping"
}

// syntaxWords rewords the YAML parser's messages that name its own
// internals.
func syntaxWords(msg string) string {
	switch {
	case strings.Contains(msg, "did not find expected ',' or ']'"):
		return "a list opened with [ is not closed: end it with ] (or write one item per line with -)"
	case strings.Contains(msg, "did not find expected ',' or '}'"):
		return "a mapping opened with { is not closed: end it with }"
	}
	return msg
}

// typeKeys maps the bare name of every struct type reachable from t to its
// YAML keys, for the known fields of an unknown-field error.
func typeKeys(t reflect.Type) map[string][]string {
	out := map[string][]string{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct || t.Name() == "" {
			return
		}
		if _, seen := out[t.Name()]; seen {
			return
		}
		out[t.Name()] = Keys(t)
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				walk(t.Field(i).Type)
			}
		}
	}
	walk(t)
	return out
}
