#!/usr/bin/env bash
# Builds turnrl and runs its tests on Debian 13 ("trixie": GCC 14, libtorch 2.x, Boost 1.83) in a
# chroot, the way a new user would: the project's own tools/setup.sh installs the packages, then the
# README's test command runs. Needs root (debootstrap, chroot, bind mounts) and a Debian mirror.
#
# Usage: sudo bash tools/check-debian13.sh [--fresh]
#   --fresh  throw the cached chroot away and bootstrap a new one
# Environment: TURNRL_DEBIAN13_CACHE (default .cache/debian13: the chroot and its ccache, kept
#   between runs), TURNRL_SHARED_DIR (default ../shared), TURNRL_MIRROR, TURNRL_BUILD_JOBS (2).
# The last line says how many tests passed: "debian13: N passed, M failed, K skipped" (ctest's own
# summary and the failures come before it; the full log is build-debian13/ctest.log).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${TURNRL_DEBIAN13_CACHE:-$ROOT/.cache/debian13}"
SHARED="$(cd "${TURNRL_SHARED_DIR:-$ROOT/../shared}" && pwd)"
MIRROR="${TURNRL_MIRROR:-http://deb.debian.org/debian}"
JOBS="${TURNRL_BUILD_JOBS:-2}"
CHROOT="$CACHE/root"

if [ "$(id -u)" -ne 0 ]; then
  echo "check-debian13: needs root (debootstrap, chroot, mount); run it with sudo" >&2
  exit 2
fi
command -v debootstrap >/dev/null || { echo "check-debian13: apt-get install debootstrap" >&2; exit 2; }

if [ "${1:-}" = "--fresh" ]; then
  rm -rf --one-file-system "$CHROOT"
fi
# The marker is written last, so an interrupted bootstrap is redone, not half-used.
if [ ! -f "$CHROOT/.turnrl-bootstrapped" ]; then
  rm -rf --one-file-system "$CHROOT"
  mkdir -p "$CHROOT"
  echo "check-debian13: debootstrap trixie into $CHROOT"
  debootstrap --variant=minbase --include=ca-certificates,ccache trixie "$CHROOT" "$MIRROR"
  touch "$CHROOT/.turnrl-bootstrapped"
fi

# The source tree and ../shared appear at /src/turnrl and /src/shared, so the default
# TURNRL_SHARED_DIR (../shared) resolves inside the chroot as it does outside.
MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
bind() {  # bind SRC DST [fstype]; a mount a killed run left behind is replaced
  mkdir -p "$2"
  if mountpoint -q "$2"; then umount -l "$2"; fi
  if [ -n "${3:-}" ]; then mount -t "$3" "$3" "$2"; else mount --bind "$1" "$2"; fi
  MOUNTS+=("$2")
}
bind "" "$CHROOT/proc" proc
bind "" "$CHROOT/sys" sysfs
bind /dev "$CHROOT/dev"
bind /dev/pts "$CHROOT/dev/pts"
[ -d /dev/shm ] && mountpoint -q /dev/shm && bind /dev/shm "$CHROOT/dev/shm"
bind "$ROOT" "$CHROOT/src/turnrl"
bind "$SHARED" "$CHROOT/src/shared"
mkdir -p "$CACHE/ccache"
bind "$CACHE/ccache" "$CHROOT/root/.ccache"
cp -L /etc/resolv.conf "$CHROOT/etc/resolv.conf"
# Certificate authorities this host added (a proxy's, say) reach the chroot too, so npm and apt
# inside it trust what the host trusts.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$CHROOT/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$CHROOT/usr/local/share/ca-certificates/"
  chroot "$CHROOT" update-ca-certificates >/dev/null
fi

# Its own build folder, so the host's build/ (Debian 12) is left alone.
chroot "$CHROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 TERM=dumb NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt TURNRL_BUILD_DIR=build-debian13 TURNRL_BUILD_JOBS="$JOBS" CCACHE_DIR=/root/.ccache \
  /bin/bash -c '
    set -euo pipefail
    cd /src/turnrl
    . /etc/os-release
    echo "check-debian13: $PRETTY_NAME"
    nice -n 10 bash tools/setup.sh -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
    echo "check-debian13: $(g++ --version | head -1)"
    set +e
    nice -n 10 ctest --test-dir build-debian13 --output-on-failure -j "$TURNRL_BUILD_JOBS" > build-debian13/ctest.log 2>&1
    rc=$?
    set -e
    grep -E "^[0-9]+% tests passed|The following tests|^\s+[0-9]+ - |Failed|\*\*\*" build-debian13/ctest.log | grep -v "^100%" || true
    echo "check-debian13: full ctest output in build-debian13/ctest.log"
    grep -E "tests passed, [0-9]+ tests failed out of" build-debian13/ctest.log | tail -1
    # The closing line: ctest counts a skipped test (test_gpu without a GPU) among those that passed.
    total=$(sed -nE "s/.*tests failed out of ([0-9]+).*/\1/p" build-debian13/ctest.log | tail -1)
    failed=$(sed -nE "s/.* ([0-9]+) tests failed out of.*/\1/p" build-debian13/ctest.log | tail -1)
    skipped=$(grep -cE "\(Skipped\)$" build-debian13/ctest.log || true)
    echo "debian13: $((${total:-0} - ${failed:-0} - skipped)) passed, ${failed:-0} failed, $skipped skipped"
    exit $rc
  '
