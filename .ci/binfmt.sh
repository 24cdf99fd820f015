#!/usr/bin/env bash
# The arm64 rehearsal's set-up: where this host is not arm64, the kernel
# runs arm64 binaries in containers through qemu-user-static's
# qemu-aarch64 handler of binfmt_misc, registered with the F flag (the
# interpreter opened at registration, so it works inside a container's
# root). This installs qemu-user-static from Debian's archive when the
# handler is missing, mounts binfmt_misc where it is not mounted and
# registers the handler from the package's binfmt.d file; on an arm64 host
# nothing is needed.
#
#   .ci/binfmt.sh COMMAND [ARGS]   set up, then run COMMAND; a set-up that
#                                  fails is said in one line and COMMAND
#                                  still runs (the rehearsal then fails
#                                  with rttlab's own line naming the fix)
#
# BINFMT_DIR overrides /proc/sys/fs/binfmt_misc (the set-up's tests).
set -uo pipefail

log() { printf '[binfmt] %s\n' "$*" >&2; }

dir=${BINFMT_DIR:-/proc/sys/fs/binfmt_misc}
handler=qemu-aarch64
conf=${BINFMT_CONF:-/usr/lib/binfmt.d/$handler.conf}

setup() {
  case "$(uname -m)" in
  aarch64 | arm64) return 0 ;;
  esac
  if [ -e "$dir/$handler" ] && grep -q '^enabled' "$dir/$handler" && grep -q '^flags: .*F' "$dir/$handler"; then
    return 0
  fi
  if [ "$(id -u)" != 0 ]; then
    log "the $handler handler of binfmt_misc is missing; run as root so that qemu-user-static can be installed and registered"
    return 1
  fi
  if [ ! -e "$conf" ]; then
    log "installing qemu-user-static"
    apt-get update -qq && apt-get install -y -qq --no-install-recommends qemu-user-static >/dev/null ||
      { log "apt-get install qemu-user-static failed"; return 1; }
  fi
  if [ ! -e "$dir/register" ]; then
    mount -t binfmt_misc binfmt_misc "$dir" || { log "mount -t binfmt_misc binfmt_misc $dir failed"; return 1; }
  fi
  if [ -e "$dir/$handler" ] && ! grep -q '^flags: .*F' "$dir/$handler"; then
    # Registered without F: its interpreter is not found in a container.
    echo -1 >"$dir/$handler"
  fi
  if [ ! -e "$dir/$handler" ]; then
    # The package's line registers the handler with its flags (F among them).
    cat "$conf" >"$dir/register" || { log "registering $handler from $conf failed"; return 1; }
  fi
  grep -q '^enabled' "$dir/$handler" || echo 1 >"$dir/$handler"
  log "$(tr '\n' ' ' <"$dir/$handler")"
}

setup
exec "$@"
