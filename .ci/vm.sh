#!/usr/bin/env bash
# The VM test's set-up (netem/vmtest): qemu-system-x86 and qemu-system-arm
# from Debian's archive, and Debian's stock kernel packages for amd64 and
# arm64 (the same ABI) unpacked (dpkg-deb -x, not installed) into a cache
# folder that later runs reuse.
#
#   .ci/vm.sh                  prepare amd64; print its unpacked kernel's folder
#   .ci/vm.sh --print ARCH     the same for ARCH (amd64 or arm64)
#   .ci/vm.sh COMMAND [ARGS]   prepare both, then run COMMAND with
#                              RTTLAB_VM_KERNEL_DIR=<amd64 folder> and
#                              RTTLAB_VM_KERNEL_DIR_ARM64=<arm64 folder>,
#                              or RTTLAB_VM_ERROR[_ARM64]=<why not> when a
#                              set-up failed (that VM test then fails with
#                              the reason; the other tests still run)
#
# A folder holds boot/vmlinuz-<version> and lib/modules/<version>/.
# RTTLAB_VM_CACHE overrides the cache (default ~/.cache/rttlab/vm).
set -uo pipefail

log() { printf '[vm] %s\n' "$*" >&2; }

cache=${RTTLAB_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rttlab/vm}
reason=$(mktemp "${TMPDIR:-/tmp}/rttlab-vm.XXXXXX")
trap 'rm -f "$reason"' EXIT

# fail records why the set-up failed (one line) and says it.
fail() {
  echo "$*" >"$reason"
  log "$*"
  return 1
}

# kernel_pkg prints the current kernel package's exact name
# (linux-image-6.1.0-N-amd64), from the archive's metapackage, updating
# apt's indexes first when they name none.
kernel_pkg() {
  local pkg
  pkg=$(kernel_dep)
  if [ -z "$pkg" ]; then
    apt-get update -qq >&2 || true
    pkg=$(kernel_dep)
  fi
  echo "$pkg"
}

kernel_dep() {
  apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}

# need_qemu BINARY PACKAGE installs PACKAGE when BINARY is missing.
need_qemu() {
  command -v "$1" >/dev/null 2>&1 && return 0
  [ "$(id -u)" = 0 ] || { fail "$1 is missing; run as root so that $2 can be installed"; return 1; }
  log "installing $2"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || true
  apt-get install -y -qq --no-install-recommends "$2" >&2 || { fail "apt-get install $2 failed"; return 1; }
}

# unpack PKG DEB moves DEB's files into the cache as PKG and prints the
# folder.
unpack() {
  local tmp=$1 pkg=$2 deb=$3
  mkdir -p "$tmp/x" && dpkg-deb -x "$deb" "$tmp/x" || return 1
  mkdir -p "$cache"
  rm -rf "${cache:?}/$pkg"
  mv "$tmp/x" "$cache/$pkg" && touch "$cache/$pkg/.complete" && echo "$cache/$pkg"
}

# cached PATTERN prints the newest complete cached kernel matching PATTERN.
cached() {
  local done
  done=$(ls -d "$cache"/$1/.complete 2>/dev/null | sort -V | tail -n 1)
  [ -n "$done" ] && echo "${done%/.complete}"
}

# use_cached PATTERN WANTED WHY prints the newest complete cached kernel
# matching PATTERN, saying that it stands in for WANTED: the archive is out
# of reach (or moved on), and an older unpacked kernel does as well. With
# none cached, the set-up fails with WHY.
use_cached() {
  local old
  if old=$(cached "$1"); then
    log "using $old (could not get $2)"
    echo "$old"
    return 0
  fi
  fail "$3"
}

# prepare_amd64 prints the amd64 kernel folder on stdout.
prepare_amd64() {
  need_qemu qemu-system-x86_64 qemu-system-x86 || return 1
  local pkg
  pkg=$(kernel_pkg)
  if [ -n "$pkg" ] && [ -f "$cache/$pkg/.complete" ]; then
    echo "$cache/$pkg"
    return 0
  fi
  if [ -n "$pkg" ]; then
    log "downloading $pkg into $cache"
    local tmp
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/rttlab-vm.XXXXXX") || { fail "mktemp failed"; return 1; }
    if (cd "$tmp" && apt-get download -o APT::Sandbox::User=root "$pkg" >&2) && unpack "$tmp" "$pkg" "$tmp"/"$pkg"_*.deb; then
      rm -rf "$tmp"
      return 0
    fi
    rm -rf "$tmp"
  fi
  use_cached 'linux-image-*-amd64' "${pkg:-the kernel of linux-image-amd64}" \
    "could not download ${pkg:-the kernel of linux-image-amd64} from Debian's archive, and $cache holds none"
}

# prepare_arm64 prints the arm64 kernel folder on stdout: the arm64 build
# of the amd64 kernel's ABI (linux-image-6.1.0-N-arm64), found in the
# archive's arm64 package indexes of this release and its security
# updates (apt is not told of a second architecture).
prepare_arm64() {
  need_qemu qemu-system-aarch64 qemu-system-arm || return 1
  local amd pkg
  amd=$(kernel_pkg)
  pkg=${amd%-amd64}-arm64
  [ -n "$amd" ] || pkg="the arm64 kernel (apt knows no linux-image-amd64 to take its ABI from)"
  if [ -n "$amd" ] && [ -f "$cache/$pkg/.complete" ]; then
    echo "$cache/$pkg"
    return 0
  fi
  local codename tmp
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/rttlab-vm.XXXXXX") || { fail "mktemp failed"; return 1; }
  if [ -n "$amd" ]; then
    local base suite file
    for bs in "http://deb.debian.org/debian-security $codename-security" "http://deb.debian.org/debian $codename"; do
      base=${bs% *} suite=${bs#* }
      file=$(curl -fsS --max-time 60 "$base/dists/$suite/main/binary-arm64/Packages.xz" 2>/dev/null | xz -dc 2>/dev/null |
        awk -v p="$pkg" '$1 == "Package:" {hit = ($2 == p)} hit && $1 == "Filename:" {print $2; exit}')
      [ -n "$file" ] && break
    done
    if [ -n "$file" ]; then
      log "downloading $pkg into $cache"
      if curl -fsS --max-time 600 -o "$tmp/k.deb" "$base/$file" && unpack "$tmp" "$pkg" "$tmp/k.deb"; then
        rm -rf "$tmp"
        return 0
      fi
    fi
  fi
  rm -rf "$tmp"
  use_cached 'linux-image-*-arm64' "$pkg" \
    "could not download $pkg from Debian's archive (arm64 package indexes of $codename and $codename-security), and $cache holds none"
}

if [ $# -eq 0 ]; then
  prepare_amd64
  exit
fi
if [ "$1" = --print ]; then
  case "${2:-}" in
  amd64) prepare_amd64 ;;
  arm64) prepare_arm64 ;;
  *) echo "usage: .ci/vm.sh --print amd64|arm64" >&2; exit 2 ;;
  esac
  exit
fi

if dir=$(prepare_amd64); then
  export RTTLAB_VM_KERNEL_DIR=$dir
else
  RTTLAB_VM_ERROR=$(cat "$reason")
  export RTTLAB_VM_ERROR=${RTTLAB_VM_ERROR:-VM set-up failed}
fi
: >"$reason"
if dir=$(prepare_arm64); then
  export RTTLAB_VM_KERNEL_DIR_ARM64=$dir
else
  RTTLAB_VM_ERROR_ARM64=$(cat "$reason")
  export RTTLAB_VM_ERROR_ARM64=${RTTLAB_VM_ERROR_ARM64:-arm64 VM set-up failed}
fi
rm -f "$reason"
trap - EXIT
exec "$@"
