#!/usr/bin/env bash
# Installs every Debian package turnrl needs, then configures and builds it (Release).
# Idempotent and non-interactive. Usage: bash tools/setup.sh [extra cmake options]
# Environment: TURNRL_BUILD_DIR (default build), TURNRL_BUILD_JOBS (default: every core).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libtorch-dev                  # the LLM policy, critic and trainer (agents/, trainer/)
  libgloo-dev                   # c10d's Gloo backend headers: data-parallel training (trainer/dist/distributed.*)
  libopenblas0-pthread          # Debian's libtorch multiplies through the system BLAS: ~30x over the reference BLAS
  libboost-dev libboost-system-dev  # Asio/Beast for the OpenAI-compatible HTTP agent
  libboost-fiber-dev libboost-context-dev  # one fiber per rollout slot (trainer/rollout/): a slot awaits its reply without a batch barrier
  libyaml-cpp-dev               # configs
  libspdlog-dev                 # logging
  nlohmann-json3-dev            # JSON Lines (golden data, metrics, tokenizer.json, safetensors headers)
  libcli11-dev                  # command-line parsing
  doctest-dev                   # tests
  libpcre2-dev                  # the tokenizer's pre-tokenizer regex
  libutf8proc-dev               # NFC normalisation
  zlib1g-dev                    # gzip'd golden data
  libzmq3-dev cppzmq-dev        # the env server (turnrl env-server) and its C++ clients
  python3-zmq                   # the Python package (python/turnrl_env) and its tests
  python3-venv python3-setuptools  # its offline install test: pip install --no-build-isolation into a venv
  python3-yaml                  # tools/replay_check.py rewrites configs
  clang                         # tools/fuzz.sh: libFuzzer and its sanitizer runtimes come with clang, not gcc
  python3 tmux
)

# Packages whose names differ between releases (Debian 12 "bookworm", 13 "trixie": tools/check-debian13.sh).
VERSION_ID=""
if [ -r /etc/os-release ]; then VERSION_ID="$(. /etc/os-release && echo "${VERSION_ID:-}")"; fi
case "$VERSION_ID" in
  12) PACKAGES+=(libclang-rt-14-dev) ;;  # clang 14's runtimes (bookworm's default clang)
  *) PACKAGES+=(libclang-rt-dev) ;;      # the default clang's runtimes (trixie: 19)
esac

# The OpenAI Node client test of `turnrl serve` (tests/openai_client) needs node and npm; a Node.js
# installed another way (e.g. NodeSource's, which bundles npm) is kept as it is.
if ! command -v npm >/dev/null; then PACKAGES+=(nodejs npm); fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR="${TURNRL_BUILD_DIR:-build}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "${TURNRL_BUILD_JOBS:-$(nproc)}"
echo "setup: built $BUILD_DIR/tools/turnrl"
