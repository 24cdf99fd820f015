package engine

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/system"
)

// NewRuntime negotiates down to the engine's API version (20.10 speaks
// 1.41, older than the client's own), and EngineInfo reports the facts the
// manifests record from /version and /info with that negotiated version.
func TestNewRuntimeNegotiatesAndReportsTheEngine(t *testing.T) {
	for _, api := range []string{"1.41", "1.47"} {
		t.Run(api, func(t *testing.T) {
			d := newDockerdAPI(t, api)
			d.handle("GET /version", replyJSON(types.Version{
				Version: "20.10.24+dfsg1", APIVersion: api, Os: "linux", Arch: "amd64", KernelVersion: "6.1.0-40-amd64",
			}))
			d.handle("GET /info", replyJSON(system.Info{NCPU: 16, MemTotal: 128 << 30, DockerRootDir: "/var/lib/docker"}))
			r := d.runtime()
			got, err := r.EngineInfo(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := EngineInfo{
				Version: "20.10.24+dfsg1", APIVersion: api, OS: "linux", Arch: "amd64",
				Kernel: "6.1.0-40-amd64", CPUs: 16, MemBytes: 128 << 30, Root: "/var/lib/docker",
			}
			if got != want {
				t.Errorf("EngineInfo\n got %+v\nwant %+v", got, want)
			}
			if len(d.requests("HEAD", "/_ping")) == 0 {
				t.Error("NewRuntime did not ping the engine")
			}
		})
	}
}

func TestEngineInfoFailures(t *testing.T) {
	for _, failing := range []string{"version", "info"} {
		t.Run(failing, func(t *testing.T) {
			d := newDockerd(t)
			version := replyJSON(types.Version{Version: "28.0.0"})
			info := replyJSON(system.Info{NCPU: 2})
			if failing == "version" {
				version = replyError(http.StatusInternalServerError, "daemon is restarting")
			} else {
				info = replyError(http.StatusInternalServerError, "daemon is restarting")
			}
			d.handle("GET /version", version)
			d.handle("GET /info", info)
			_, err := d.runtime().EngineInfo(context.Background())
			if want := "engine " + failing + ": "; err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "daemon is restarting") {
				t.Errorf("EngineInfo: %v, want %q... with the engine's message", err, want)
			}
		})
	}
}

// With no engine listening, NewRuntime says so in one line that names the
// host it tried: cmd/rttlab turns ErrNoEngine into advice.
func TestNewRuntimeWithoutEngine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := "tcp://" + l.Addr().String()
	l.Close() // nothing listens there now
	setDockerEnv(t, host)
	r, err := NewRuntime(context.Background())
	if err == nil {
		r.Close()
		t.Fatal("NewRuntime with no engine succeeded")
	}
	if !errors.Is(err, ErrNoEngine) || errors.Is(err, ErrEngineDenied) {
		t.Errorf("err %v, want ErrNoEngine only", err)
	}
	if msg := err.Error(); !strings.Contains(msg, host) || strings.Contains(msg, "\n") {
		t.Errorf("message %q should name %s on one line", msg, host)
	}
}

// An engine that refuses this user is ErrNoEngine and ErrEngineDenied (the
// advice is to join the docker group, not to start the engine). Tests run
// as root here, where a socket's mode refuses nobody, so the refusal comes
// from the stand-in's answer to the ping.
func TestNewRuntimePermissionDenied(t *testing.T) {
	d := newDockerd(t)
	d.refuse = "permission denied while trying to connect to the Docker daemon socket"
	setDockerEnv(t, d.host())
	r, err := NewRuntime(context.Background())
	if err == nil {
		r.Close()
		t.Fatal("NewRuntime succeeded against a refusing engine")
	}
	if !errors.Is(err, ErrNoEngine) || !errors.Is(err, ErrEngineDenied) {
		t.Errorf("err %v, want ErrNoEngine and ErrEngineDenied", err)
	}
	if !strings.Contains(err.Error(), d.host()) {
		t.Errorf("err %v does not name %s", err, d.host())
	}
}

func TestNewRuntimeBadHost(t *testing.T) {
	setDockerEnv(t, "127.0.0.1:2375") // no scheme: the client cannot parse it
	if r, err := NewRuntime(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "docker client: ") || errors.Is(err, ErrNoEngine) {
		if r != nil {
			r.Close()
		}
		t.Errorf("NewRuntime with DOCKER_HOST=127.0.0.1:2375: %v", err)
	}
}
