package stack

import (
	"context"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

func TestComposeDBCredentials(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want DBCredentials
		err  string
	}{
		{map[string]string{"POSTGRES_PASSWORD": "pw"}, DBCredentials{User: "postgres", Password: "pw", Database: "postgres", Super: "postgres"}, ""},
		{map[string]string{"POSTGRES_USER": "shop", "POSTGRES_PASSWORD": "pw", "POSTGRES_DB": "shopdb"}, DBCredentials{User: "shop", Password: "pw", Database: "shopdb", Super: "shop"}, ""},
		{map[string]string{"RTTLAB_DB_PASSWORD": "pw"}, RttlabDB("pw"), ""},
		{map[string]string{"POSTGRES_USER": "shop"}, DBCredentials{}, "neither POSTGRES_PASSWORD nor RTTLAB_DB_PASSWORD"},
	} {
		got, err := ComposeDBCredentials(c.env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v", c.env, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: %+v %v, want %+v", c.env, got, err, c.want)
		}
	}
}

// An image the engine lacks is one line naming the service and the fix.
func TestComposeImageMissing(t *testing.T) {
	file := fakelab.WriteCompose(t, fakelab.ShopCompose)
	f := enginefake.New()
	f.AddImage("example/postgres:17", nil)
	f.AddImage("example/cache:7", nil)
	err := CheckComposeImages(context.Background(), f, apps.ComposeRef{File: file, AppService: "web", DBService: "pg"})
	want := "service web's image shop_app-web is not present locally: build it first: docker compose -f " + file + " build web"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}
