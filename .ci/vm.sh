#!/usr/bin/env bash
# The VM test's set-up (netem/vmtest): qemu-system-x86 from Debian's
# archive, and Debian's stock kernel package unpacked (dpkg-deb -x, not
# installed) into a cache folder that later runs reuse.
#
#   .ci/vm.sh                  prepare; print the unpacked kernel's folder
#   .ci/vm.sh COMMAND [ARGS]   prepare, then run COMMAND with
#                              RTTLAB_VM_KERNEL_DIR=<that folder>, or with
#                              RTTLAB_VM_ERROR=<why not> when set-up failed
#                              (the VM test then fails with that reason;
#                              the other tests still run)
#
# The folder holds boot/vmlinuz-<version> and lib/modules/<version>/.
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

kernel_pkg() {
  apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}

# prepare prints the kernel folder on stdout.
prepare() {
  if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { fail "qemu-system-x86_64 is missing; run as root so that qemu-system-x86 can be installed"; return 1; }
    log "installing qemu-system-x86"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || true
    apt-get install -y -qq --no-install-recommends qemu-system-x86 >&2 ||
      { fail "apt-get install qemu-system-x86 failed"; return 1; }
  fi
  # The current kernel package's exact name (linux-image-6.1.0-N-amd64),
  # from the archive's metapackage.
  local pkg
  pkg=$(kernel_pkg)
  if [ -z "$pkg" ]; then
    apt-get update -qq >&2 || true
    pkg=$(kernel_pkg)
  fi
  if [ -n "$pkg" ] && [ -f "$cache/$pkg/.complete" ]; then
    echo "$cache/$pkg"
    return 0
  fi
  if [ -n "$pkg" ]; then
    log "downloading $pkg into $cache"
    local tmp
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/rttlab-vm.XXXXXX") || { fail "mktemp failed"; return 1; }
    if (cd "$tmp" && apt-get download -o APT::Sandbox::User=root "$pkg" >&2) &&
      mkdir -p "$tmp/x" && dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/x"; then
      mkdir -p "$cache"
      rm -rf "${cache:?}/$pkg"
      mv "$tmp/x" "$cache/$pkg" && touch "$cache/$pkg/.complete"
      rm -rf "$tmp"
      echo "$cache/$pkg"
      return 0
    fi
    rm -rf "$tmp"
  fi
  # The archive is out of reach (or moved on): an older unpacked kernel
  # in the cache does as well.
  local done
  done=$(ls -d "$cache"/linux-image-*/.complete 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$done" ]; then
    log "using ${done%/.complete} (could not get ${pkg:-the kernel of linux-image-amd64})"
    echo "${done%/.complete}"
    return 0
  fi
  fail "could not download ${pkg:-the kernel of linux-image-amd64} from Debian's archive, and $cache holds none"
}

if [ $# -eq 0 ]; then
  prepare
  exit
fi

if dir=$(prepare); then
  export RTTLAB_VM_KERNEL_DIR=$dir
else
  RTTLAB_VM_ERROR=$(cat "$reason")
  export RTTLAB_VM_ERROR=${RTTLAB_VM_ERROR:-VM set-up failed}
fi
rm -f "$reason"
trap - EXIT
exec "$@"
