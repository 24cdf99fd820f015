package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// ExecRequest is one command run in a pod's container.
type ExecRequest struct {
	Namespace, Pod, Container string
	Cmd                       []string
	Stdin                     io.Reader // nil: none
	Stdout, Stderr            io.Writer // never nil
}

// Executor runs a command in a pod's container and waits for it. A
// command that ran and exited non-zero is an error carrying its status
// (client-go's exec.ExitError, which exec.CodeExitError is); any other
// error is the exec's own failure. The runtime's is pods/exec over
// WebSocket, falling back to SPDY; tests fake it.
type Executor interface {
	Exec(ctx context.Context, r ExecRequest) error
}

// apiExecutor is pods/exec of the apiserver.
type apiExecutor struct {
	cfg *rest.Config
	c   kubernetes.Interface
}

// Exec streams r over pods/exec: WebSocket where the apiserver speaks it
// (Kubernetes 1.30 and later), SPDY otherwise.
func (x *apiExecutor) Exec(ctx context.Context, r ExecRequest) error {
	req := x.c.CoreV1().RESTClient().Post().Resource("pods").Namespace(r.Namespace).Name(r.Pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: r.Container,
			Command:   r.Cmd,
			Stdin:     r.Stdin != nil,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(x.cfg, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(x.cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: r.Stdin, Stdout: r.Stdout, Stderr: r.Stderr})
}

// Exec runs s.Cmd in member id and returns its exit status: in the pod's
// container, or for a session in its target's network namespace from the
// node agent. Environment goes through env, a user through runuser, as
// pods/exec takes neither.
func (l *Lab) Exec(ctx context.Context, id string, s runtime.ExecSpec) (int, error) {
	if len(s.Cmd) == 0 {
		return -1, fmt.Errorf("exec in %s: no command", id)
	}
	m, err := parseID(id)
	if err != nil {
		return -1, err
	}
	cmd := wrapCmd(s.Cmd, s.User, s.Env)
	if m.Session != "" {
		cmd = append([]string{"sh", "-c", sessionExecScript, "sh", m.Session}, cmd...)
	}
	to := s.Timeout
	if to == 0 {
		to = shortCall
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	return l.exec(ctx, m, cmd, s.Stdin, s.Stdout, s.Stderr, s.Cmd[0])
}

// exec runs cmd in m's container and reads its exit status; what names
// the command in errors.
func (l *Lab) exec(ctx context.Context, m memberID, cmd []string, stdin io.Reader, stdout, stderr io.Writer, what string) (int, error) {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	err := l.X.Exec(ctx, ExecRequest{Namespace: m.Namespace, Pod: m.Pod, Container: m.Container, Cmd: cmd, Stdin: stdin, Stdout: stdout, Stderr: stderr})
	var ee utilexec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitStatus(), nil
	case ctx.Err() != nil:
		return -1, fmt.Errorf("exec %s in %s: %w", what, m, ctx.Err())
	}
	return -1, fmt.Errorf("exec %s in %s: %s", what, m, firstLine(err.Error()))
}

// asUser runs its arguments as user $1: at once when the container runs
// as that user already (an image whose user is not root cannot change
// user, as postgres' cannot), else through runuser, which only root may.
const asUser = `u=$1; shift; if [ "$(id -un)" = "$u" ] || [ "$(id -u)" = "$u" ]; then exec "$@"; fi; exec runuser -u "$u" -- "$@"`

// wrapCmd is cmd run as user with env added.
func wrapCmd(cmd []string, user string, env []string) []string {
	out := []string{}
	if user != "" {
		out = append(out, "sh", "-c", asUser, "sh", user)
	}
	if len(env) > 0 {
		out = append(append(out, "env"), env...)
	}
	return append(out, cmd...)
}

// Logs returns the last tail lines of member id's output.
func (l *Lab) Logs(ctx context.Context, id string, tail int) (string, error) {
	m, err := parseID(id)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	if m.Session != "" {
		var out strings.Builder
		if _, err := l.exec(ctx, m, []string{"sh", "-c", sessionLogsScript, "sh", m.Session, strconv.Itoa(tail)}, nil, &out, nil, "logs"); err != nil {
			return "", err
		}
		return out.String(), nil
	}
	n := int64(tail)
	b, err := l.C.CoreV1().Pods(m.Namespace).GetLogs(m.Pod, &corev1.PodLogOptions{Container: m.Container, TailLines: &n}).Do(ctx).Raw()
	if err != nil {
		return "", l.podErr("logs", m, err)
	}
	return string(b), nil
}
