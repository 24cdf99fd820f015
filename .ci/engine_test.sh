#!/usr/bin/env bash
# Checks .ci/engine.sh's decisions on hosts unlike this one, with stand-ins
# for docker, dockerd, dpkg-query, apt-get, id and curl on a PATH of their
# own: an engine that already answers (Docker CE, a remote DOCKER_HOST) is
# used as it is and docker.io is never installed over it; with no engine,
# the set-up names the packages to install, or installs docker.io as root.
#
#   bash .ci/engine_test.sh
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# stubs DIR: a PATH with the real tools engine.sh uses and stand-ins for the
# rest; the stand-ins read STUB_* variables and log to $DIR/log. The tools
# named in $absent are left out.
stubs() {
  local d=$1
  mkdir -p "$d"
  for t in bash sh grep seq sleep tail ls awk cat mkdir env touch setsid; do
    ln -sf "$(command -v "$t")" "$d/$t"
  done
  for t in debootstrap iptables ip ping gcc tcpdump; do
    case " ${absent:-} " in *" $t "*) continue ;; esac
    printf '#!/bin/sh\nexit 0\n' >"$d/$t"
  done
  cat >"$d/id" <<'EOF'
#!/bin/sh
echo "${STUB_UID:-0}"
EOF
  cat >"$d/docker" <<'EOF'
#!/bin/sh
echo "docker $*" >>"$STUB_LOG"
exit "${STUB_ENGINE:-1}"
EOF
  cat >"$d/curl" <<'EOF'
#!/bin/sh
exit "${STUB_ENGINE:-1}"
EOF
  cat >"$d/dpkg-query" <<'EOF'
#!/bin/sh
for a; do pkg=$a; done
for p in $STUB_PKGS; do
  [ "$p" = "$pkg" ] && { printf 'install ok installed'; exit 0; }
done
exit 1
EOF
  cat >"$d/apt-get" <<'EOF'
#!/bin/sh
echo "apt-get $*" >>"$STUB_LOG"
exit 0
EOF
  chmod +x "$d"/*
}

# run NAME [VAR=VALUE...]: engine.sh `touch ran` (or the shell command
# $cmd) on a fresh stub PATH; sets code, out (stderr) and log (what the
# stand-ins were asked).
run() {
  local name=$1
  shift
  local d=$tmp/$name
  stubs "$d/bin"
  : >"$d/log"
  out=$(cd "$d" && env -i PATH="$d/bin" TMPDIR="$d" STUB_LOG="$d/log" "$@" bash "$here/engine.sh" sh -c "${cmd:-touch ran}" 2>&1)
  code=$?
  log=$(cat "$d/log")
  ran=no
  [ -e "$d/ran" ] && ran=yes
}

check() {
  if ! eval "$2"; then
    echo "FAIL $1: $2 (exit $code; ran $ran)"
    echo "  stderr: $out"
    echo "  asked: $log"
    fails=$((fails + 1))
  else
    echo "ok   $1"
  fi
}

# Docker CE already answering, no dockerd on PATH (a rootless engine):
# used as it is, nothing installed.
run ce-answers STUB_ENGINE=0 STUB_PKGS="docker-ce" DOCKER_HOST="unix://$tmp/docker.sock"
check "an answering engine is used" '[ $code = 0 ] && [ $ran = yes ]'
check "an answering engine gets no docker.io" '! grep -q docker.io <<<"$log"'

# A remote engine named by DOCKER_HOST.
run docker-host STUB_ENGINE=0 DOCKER_HOST=tcp://10.0.0.9:2375
check "DOCKER_HOST is used" '[ $code = 0 ] && [ $ran = yes ] && grep -q "docker info" <<<"$log"'
check "DOCKER_HOST gets no docker.io" '! grep -q docker.io <<<"$log"'

# A DOCKER_HOST that does not answer is refused, nothing started.
run docker-host-down DOCKER_HOST=tcp://10.0.0.9:2375 STUB_PKGS="docker-ce"
check "a silent DOCKER_HOST is refused" '[ $code = 1 ] && [ $ran = no ] && grep -q "DOCKER_HOST=tcp://10.0.0.9:2375 does not answer" <<<"$out"'

# Docker CE installed but stopped and its dockerd not on PATH: refused
# with the fix, docker.io never installed over it.
run ce-stopped STUB_PKGS="docker-ce"
check "stopped Docker CE is refused" '[ $code = 1 ] && [ $ran = no ] && grep -q "docker-ce is installed" <<<"$out" && grep -q "systemctl start docker" <<<"$out"'
check "stopped Docker CE gets no docker.io" '! grep -q docker.io <<<"$log"'
run moby-stopped STUB_PKGS="moby-engine"
check "stopped Moby is refused" '[ $code = 1 ] && grep -q "moby-engine is installed" <<<"$out" && ! grep -q docker.io <<<"$log"'

# No engine at all, not root: the packages are named, for Debian and
# Ubuntu, and nothing is installed or started.
run none-user STUB_UID=1000
check "no engine, not root: refused" '[ $code = 1 ] && [ $ran = no ] && [ -z "$log" ]'
check "no engine, not root: names the package" 'grep -q "on Debian and Ubuntu the package is docker.io" <<<"$out"'

# No engine at all, as root: docker.io is installed.
run none-root
check "no engine, root: installs docker.io" 'grep -q "apt-get install .*docker.io" <<<"$log"'

# A host without gcc: make test's set-up installs it (the race
# detector), make run's installs none of the tests' packages.
absent=gcc run none-root-nogcc
check "the tests' set-up installs gcc" 'grep -q "apt-get install .*gcc libc6-dev" <<<"$log"'
check "the tests' set-up has tcpdump already" '! grep -q tcpdump <<<"$log"'
absent=tcpdump run none-root-notcpdump
check "the tests' set-up installs tcpdump" 'grep -q "apt-get install .*tcpdump" <<<"$log"'
absent="gcc tcpdump" run none-root-run RTTLAB_SETUP=run
check "make run's set-up installs docker.io" 'grep -q "apt-get install .*docker.io" <<<"$log"'
check "make run's set-up installs no test package" '! grep -qE "gcc|libc6-dev|postgresql|tcpdump" <<<"$log"'

# A command run beside the set-up (make run's binary build) is waited for
# before the command; if it fails, the command does not run.
cmd="[ -e beside ] && touch ran" run beside STUB_ENGINE=0 DOCKER_HOST=tcp://10.0.0.9:2375 RTTLAB_BESIDE="sleep 1; touch beside"
check "the command beside the set-up is done first" '[ $code = 0 ] && [ $ran = yes ]'
run beside-fails STUB_ENGINE=0 DOCKER_HOST=tcp://10.0.0.9:2375 RTTLAB_BESIDE="exit 3"
check "a failed command beside the set-up stops it" '[ $code = 1 ] && [ $ran = no ] && grep -q "rttlab set-up: exit 3 failed" <<<"$out"'
# A set-up that stops early stops the command beside it, and what that
# started.
run beside-stopped DOCKER_HOST=tcp://10.0.0.9:2375 RTTLAB_BESIDE="sh -c 'sleep 2; touch late' & wait"
sleep 3
check "a refused set-up stops the command beside it" '[ $code = 1 ] && [ ! -e "$tmp/beside-stopped/late" ]'

if [ $fails -gt 0 ]; then
  echo "engine_test: $fails checks failed"
  exit 1
fi
echo "engine_test: all checks passed"
