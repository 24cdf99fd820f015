#!/usr/bin/env bash
# Host set-up shared by `make test` and `make run` on a fresh Debian
# machine (as root): installs what rttlab needs from Debian's archive if
# missing, starts dockerd when no engine answers, runs the given command,
# and stops dockerd again only if this script started it.
#
#   .ci/engine.sh COMMAND [ARGS...]
#
# KEEP_ENGINE=1 leaves a dockerd this script started running.
# RTTLAB_SETUP=run leaves out what only the tests need (gcc and libc6-dev
# for the race detector, postgresql and tcpdump for tests): make run's
# set-up.
# RTTLAB_BESIDE=CMD runs the shell command CMD while the set-up installs
# and starts (make run builds rttlab's binary so); COMMAND starts once
# both are done, and not at all if CMD fails.
set -euo pipefail

log() { printf '[setup] %s\n' "$*" >&2; }

# What this script starts is stopped when it ends: the command beside the
# set-up, in a session of its own, with everything it started if the
# set-up ends before it (a refusal, a failed install, Ctrl-C); the
# dockerd it started unless KEEP_ENGINE is set.
beside="" started=""
stop_beside() {
  [ -n "$beside" ] || return 0
  # The process itself too: it may not have made its session yet.
  kill -TERM "$beside" 2>/dev/null || true
  kill -TERM -- "-$beside" 2>/dev/null || true
  return 0
}
stop_engine() {
  if [ -n "$started" ] && [ -z "${KEEP_ENGINE:-}" ]; then
    log "stopping the dockerd this script started"
    kill "$started" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$started" 2>/dev/null || break; sleep 0.5; done
    # containerd is started by dockerd and stops with it.
  fi
}
trap 'stop_beside; stop_engine' EXIT
trap 'exit 130' INT TERM

if [ -n "${RTTLAB_BESIDE:-}" ]; then
  setsid -w sh -c "$RTTLAB_BESIDE" &
  beside=$!
fi

sock=/var/run/docker.sock
engine_up() {
  if [ -n "${DOCKER_HOST:-}" ]; then
    command -v docker >/dev/null && docker info >/dev/null 2>&1
  else
    [ -S "$sock" ] && curl -fsS --max-time 3 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1
  fi
}

if [ -n "${DOCKER_HOST:-}" ] && ! engine_up; then
  if ! command -v docker >/dev/null; then
    echo "rttlab set-up: DOCKER_HOST=$DOCKER_HOST is set but the docker CLI that checks it is missing: install docker-ce-cli or docker.io, or unset DOCKER_HOST" >&2
  else
    echo "rttlab set-up: DOCKER_HOST=$DOCKER_HOST does not answer; unset it to let this script start a local dockerd" >&2
  fi
  exit 1
fi

# An engine that answers is used as it is (Docker CE, Docker Desktop, a
# remote DOCKER_HOST): docker.io is installed only where no engine answers
# and none is installed, and never over Docker CE or Moby.
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
need_pkgs=()
if ! engine_up && ! command -v dockerd >/dev/null 2>&1; then
  for p in docker-ce moby-engine; do
    if installed "$p"; then
      echo "rttlab set-up: $p is installed but dockerd is not on PATH and no engine answers; start the engine (systemctl start docker) or put dockerd on PATH" >&2
      exit 1
    fi
  done
  need_pkgs+=(docker.io)
fi
command -v debootstrap >/dev/null 2>&1 || need_pkgs+=(debootstrap)
command -v iptables >/dev/null 2>&1 || need_pkgs+=(iptables)
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
command -v curl >/dev/null 2>&1 || need_pkgs+=(curl)
# The wire shaping test pings from a container's namespace with iputils.
command -v ping >/dev/null 2>&1 || need_pkgs+=(iputils-ping)
if [ "${RTTLAB_SETUP:-}" != run ]; then
  # The race detector (make test's unit pass) needs cgo.
  command -v gcc >/dev/null 2>&1 || need_pkgs+=(gcc libc6-dev)
  # The anatomy's independent check captures with tcpdump.
  command -v tcpdump >/dev/null 2>&1 || need_pkgs+=(tcpdump)
  [ -x /usr/lib/postgresql/15/bin/postgres ] || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need_pkgs+=(postgresql)
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "rttlab set-up: missing ${need_pkgs[*]}; run as root (sudo make ...) so they can be installed" >&2
    case " ${need_pkgs[*]} " in
    *" docker.io "*) echo "  no Docker engine answers: on Debian and Ubuntu the package is docker.io (apt-get install docker.io); Docker CE (docker-ce, from download.docker.com) works too" >&2 ;;
    esac
    exit 1
  fi
  log "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
  # The postgresql package starts a cluster through its init scripts on
  # some machines; rttlab's tests start their own servers.
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    for c in $(pg_lsclusters -h 2>/dev/null | awk '{print $1"/"$2}'); do pg_ctlcluster ${c%/*} ${c#*/} stop 2>/dev/null || true; done
  fi
fi

if ! engine_up; then
  log "starting dockerd"
  logf=${TMPDIR:-/tmp}/rttlab-dockerd.log
  dockerd >"$logf" 2>&1 &
  pid=$!
  for _ in $(seq 1 60); do
    engine_up && break
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "rttlab set-up: dockerd exited; last lines of $logf:" >&2
      tail -n 20 "$logf" >&2
      exit 1
    fi
    sleep 0.5
  done
  engine_up || { echo "rttlab set-up: dockerd did not answer within 30 s (see $logf)" >&2; kill "$pid"; exit 1; }
  started=$pid
fi

if [ -n "$beside" ]; then
  rc=0
  wait "$beside" || rc=$?
  beside=""
  if [ $rc -ne 0 ]; then
    echo "rttlab set-up: $RTTLAB_BESIDE failed (see above)" >&2
    exit 1
  fi
fi
"$@"
