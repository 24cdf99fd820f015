package proxyserve

import (
	"errors"
	"strings"
	"testing"
)

type testConfig struct {
	Name string `json:"name"`
}

func (c testConfig) Validate() error {
	if c.Name == "" {
		return errors.New("no name")
	}
	return nil
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig[testConfig]([]byte(`{"name":"a"}`), "test proxy")
	if err != nil || c.Name != "a" {
		t.Fatalf("got %+v, %v", c, err)
	}
	for in, want := range map[string]string{
		`{"name":"a","x":1}`: `parse test proxy config: json: unknown field "x"`,
		`{"name":"a"} {}`:    "parse test proxy config: data after the JSON object",
		`{"name":`:           "parse test proxy config: unexpected EOF",
		`{}`:                 "no name",
	} {
		if _, err := ParseConfig[testConfig]([]byte(in), "test proxy"); err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %q", in, err, want)
		}
	}
}

func TestCheckUpstream(t *testing.T) {
	seen := map[string]bool{}
	if err := CheckUpstream(seen, 0, "a", "http://a:8080", true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, url  string
		originOnly bool
		want       string
	}{
		{"", "http://b", true, "upstreams[1] has no name"},
		{"a", "http://b", true, `upstreams[1]: "a" listed twice`},
		{"b", "ftp://b", false, `upstream b: url "ftp://b": want http://host[:port]`},
		{"c", "http://c/x", true, "upstream c: url \"http://c/x\": an origin only"},
	} {
		err := CheckUpstream(seen, 1, c.name, c.url, c.originOnly)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: err = %v", c, err)
		}
	}
	if err := CheckUpstream(seen, 2, "d", "http://d/base", false); err != nil {
		t.Errorf("a path is allowed unless origin only: %v", err)
	}
}
