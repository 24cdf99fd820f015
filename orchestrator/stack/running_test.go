package stack

import (
	"strings"
	"testing"
)

// A running database's credentials come from its own environment, else
// from its app's DATABASE_URL, else from the app's libpq variables.
func TestRunningDBCredentials(t *testing.T) {
	for _, c := range []struct {
		name       string
		db, app    []string
		want       DBCredentials
		wantErrPre string
	}{
		{"official image", []string{"POSTGRES_USER=shop", "POSTGRES_PASSWORD=pw"}, nil, DBCredentials{User: "shop", Password: "pw", Database: "shop", Super: "shop"}, ""},
		{"rttlab's image", []string{"RTTLAB_DB_PASSWORD=pw"}, nil, RttlabDB("pw"), ""},
		{"app's URL over PG*", nil, []string{"PGUSER=a", "PGPASSWORD=b", "DATABASE_URL=postgres://u:p@db:5432/shop?sslmode=disable"},
			DBCredentials{User: "u", Password: "p", Database: "shop", Super: "u"}, ""},
		{"URL without password, PG*", nil, []string{"DATABASE_URL=postgres://u@db/x", "PGUSER=a", "PGPASSWORD=b"},
			DBCredentials{User: "a", Password: "b", Database: "a", Super: "a"}, ""},
		{"none", []string{"POSTGRES_USER=x"}, []string{"PGUSER=a"}, DBCredentials{}, "no credentials"},
	} {
		got, err := RunningDBCredentials(c.db, c.app)
		if c.wantErrPre != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.wantErrPre) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.wantErrPre)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}
