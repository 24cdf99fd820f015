#!/usr/bin/env bash
# Prints the path of a go command of at least go.mod's version, fetching
# that exact release when the machine has none (a fresh Debian 12 has no Go,
# or golang-go 1.19, which is too old to switch toolchains by itself).
#
# The release comes the way the go command itself switches toolchains: the
# module golang.org/toolchain@v0.0.1-go<version>.<os>-<arch> from the module
# proxy (GOPROXY's first URL, else proxy.golang.org), checked against the
# checksum database's h1: hash (through the proxy, then sum.golang.org;
# GOSUMDB=off skips the check), unpacked under
# ${XDG_CACHE_HOME:-~/.cache}/rttlab/toolchain/go<version>: the folder
# `rttlab` uses for the toolchain it needs to build the Go app, so a
# toolchain fetched here is not fetched again there.
#
#   GO=$(.ci/go.sh) && "$GO" build ./...
#
# Progress and errors go to stderr; stdout carries only the path.
set -euo pipefail

log() { printf '[go] %s\n' "$*" >&2; }
die() { printf 'rttlab set-up: %s\n' "$*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
need=$(awk '$1 == "go" { print $2; exit }' "$root/go.mod")
[ -n "$need" ] || die "no go directive in $root/go.mod"
case $need in *.*.*) ;; *) need=$need.0 ;; esac

# version_of GO prints the release of a go command without letting it
# switch toolchains (go1.19 has no GOTOOLCHAIN and ignores it).
version_of() {
  GOTOOLCHAIN=local "$1" version 2>/dev/null | awk '{ sub(/^go/, "", $3); print $3; exit }'
}
# at_least A B: A >= B as Go release numbers (1.26.8 >= 1.26.0).
at_least() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$2" ]; }

candidates=()
[ -n "${GO:-}" ] && candidates+=("$GO")
command -v go >/dev/null 2>&1 && candidates+=("$(command -v go)")
candidates+=(/usr/local/go/bin/go)
cache=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rttlab/toolchain
candidates+=("$cache/go$need/bin/go")
for g in "${candidates[@]}"; do
  [ -x "$g" ] || continue
  v=$(version_of "$g")
  if [ -n "$v" ] && at_least "$v" "$need"; then
    echo "$g"
    exit 0
  fi
  [ -n "$v" ] && log "$g is go$v; rttlab needs go$need or later"
done

case ${GOTOOLCHAIN:-} in
  local | path | *+path) die "no go$need or later on this machine and GOTOOLCHAIN=$GOTOOLCHAIN turns downloads off: install Go $need (https://go.dev/dl) or unset GOTOOLCHAIN" ;;
esac

os=$(uname -s | tr '[:upper:]' '[:lower:]')
case $(uname -m) in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  armv6l | armv7l) arch=armv6l ;;
  i386 | i686) arch=386 ;;
  ppc64le) arch=ppc64le ;;
  s390x) arch=s390x ;;
  riscv64) arch=riscv64 ;;
  *) die "no Go toolchain module for machine $(uname -m): install Go $need (https://go.dev/dl)" ;;
esac
mod=golang.org/toolchain
modver=v0.0.1-go$need.$os-$arch

proxy=https://proxy.golang.org
if [ -n "${GOPROXY:-}" ]; then
  proxy=""
  for e in $(printf '%s' "$GOPROXY" | tr ',|' '  '); do
    [ "$e" = off ] && break
    case $e in http://* | https://*) proxy=${e%/}; break ;; esac
  done
  [ -n "$proxy" ] || die "no go$need or later on this machine and GOPROXY=$GOPROXY names no proxy to fetch it from: install Go $need or set GOPROXY=https://proxy.golang.org"
fi

# Fetching needs curl and unzip; a fresh machine may lack them.
missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl ca-certificates)
command -v unzip >/dev/null 2>&1 || missing+=(unzip)
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "fetching go$need needs ${missing[*]}: install them, or run as root (sudo make ...) so they can be installed"
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.go$need-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

start=$(date +%s)
log "fetching go$need for $os/$arch from $proxy ($mod@$modver, about 70 MB)"
curl -fsSL --retry 2 -o "$tmp/go.zip" "$proxy/$mod/@v/$modver.zip" ||
  die "could not fetch $proxy/$mod/@v/$modver.zip: check the network or GOPROXY, or install Go $need (https://go.dev/dl)"

# The h1: hash is the module zip's dirhash: SHA-256 over the sorted lines
# "<sha256 of file>  <name in zip>", base64-encoded.
sumdb=${GOSUMDB:-sum.golang.org}
if [ "$sumdb" != off ]; then
  host=${sumdb%% *}
  host=${host%%+*}
  want=""
  for u in "$proxy/sumdb/$host/lookup/$mod@$modver" "https://$host/lookup/$mod@$modver"; do
    want=$(curl -fsSL --max-time 30 "$u" 2>/dev/null | awk -v m="$mod" -v v="$modver" '$1 == m && $2 == v { print $3; exit }') && [ -n "$want" ] && break
  done
  [ -n "$want" ] || die "the checksum database has no entry for $mod@$modver (tried $proxy/sumdb/$host and https://$host): set GOSUMDB=off to skip the check"
fi

mkdir "$tmp/x"
unzip -q "$tmp/go.zip" -d "$tmp/x"
if [ "$sumdb" != off ]; then
  hex=$(cd "$tmp/x" && unzip -Z1 "$tmp/go.zip" | grep -v '/$' | LC_ALL=C sort |
    xargs -d '\n' sha256sum | sha256sum | cut -d' ' -f1)
  # Hex digest to bytes with printf's \x escapes (no xxd on a fresh machine).
  got=h1:$(printf "$(printf '%s' "$hex" | sed 's/../\\x&/g')" | base64)
  [ "$got" = "$want" ] || die "$mod@$modver: checksum mismatch (got $got, the checksum database says $want): not installed"
fi

src="$tmp/x/$mod@$modver"
[ -f "$src/bin/go" ] || die "$mod@$modver has no bin/go"
chmod -R u+w "$src"
chmod +x "$src"/bin/* "$src"/pkg/tool/*/* 2>/dev/null || true
final="$cache/go$need"
if ! mv -T "$src" "$final" 2>/dev/null; then
  [ -x "$final/bin/go" ] || die "could not install $final"
fi
log "installed go$need in $final ($(($(date +%s) - start)) s)"
echo "$final/bin/go"
