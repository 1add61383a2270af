#!/usr/bin/env bash
# "Does it work on this GPU, and how fast?" in one call, on a machine with a CUDA PyTorch, nvcc,
# CMake and ninja but none of turnrl's other dependencies and no network.
#
#   bash tools/gpu-check.sh prepare [BUNDLE]   here (Debian 12 with a mirror): gathers into BUNDLE
#       (default gpu-check/, git-ignored) the .debs of the non-torch dependencies (apt-get download)
#       unpacked into BUNDLE/prefix (dpkg -x), a copy of ../shared and the sources.
#   bash tools/gpu-check.sh run [BUNDLE]       there: builds BUNDLE/src against the machine's
#       PyTorch (CMAKE_PREFIX_PATH = torch's + BUNDLE/prefix/usr), runs `ctest -L gpu`, then a short
#       training run of the qwen2.5-0.5b architecture (random weights) on BabyAI goto with Verlog's
#       batch (32 envs x 8 turns, mini-batch 128; shorter replies, below), and prints turns/s, generation and update tokens/s
#       and peak GPU memory. Uses nothing outside BUNDLE but the machine's toolchain and PyTorch.
#
# Environment (run): GPU_CHECK_ITERATIONS (2), GPU_CHECK_MINUTES (5: the training run's whole
#   budget, `train --total-minutes`), GPU_CHECK_RESPONSE_TOKENS (64; a random model never stops, so
#   every reply is this long. Verlog's 512 needs micro-batches the learner lacks: a mini-batch of 128
#   rows x 512 tokens holds full-vocabulary log-softmaxes of 128 x 512 x 151936 floats, ~40 GB each),
#   GPU_CHECK_JOBS (all cores), TORCH_PREFIX (else python3's torch.utils.cmake_prefix_path),
#   GPU_CHECK_SKIP_TESTS=1.
# The .debs are Debian 12's (glibc 2.36): a machine with an older glibc needs its own copies.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODE="${1:-}"
# Run from inside a bundle (BUNDLE/src/tools/gpu-check.sh), the bundle is the folder above src.
if [ -f "$ROOT/../.turnrl-gpu-bundle" ]; then DEFAULT_BUNDLE="$(cd "$ROOT/.." && pwd)"; else DEFAULT_BUNDLE="$ROOT/gpu-check"; fi
BUNDLE="${2:-$DEFAULT_BUNDLE}"

# The build dependencies that are not libtorch (tools/setup.sh's list); their runtime libraries come
# with them below. libgloo-dev: c10d's Gloo headers, used only where the PyTorch lacks them.
DEV_PACKAGES=(nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev zlib1g-dev cppzmq-dev libzmq3-dev libutf8proc-dev
              libpcre2-dev libcli11-dev doctest-dev libboost-dev libboost-system-dev libboost-fiber-dev
              libboost-context-dev libgloo-dev pkg-config)
# In every dependency closure but on every machine that builds C++ (libc, the compiler's runtime),
# or pulled in only by parts turnrl does not use (Gloo's transports, Kerberos' and libbsd's headers).
SKIP='^(adduser|cdebconf|debconf|dpkg|tar|passwd|install-info|readline-common|gcc-[0-9]+-base|libc6|libc6-dev|libc-dev-bin|linux-libc-dev|libgcc-s1|libgcc-[0-9]+-dev|libstdc\+\+6|libstdc\+\+-[0-9]+-dev|libasan[0-9]+|libatomic1|libitm1|liblsan0|libtsan[0-9]+|libubsan1|libquadmath0|libgomp1|libcrypt1|libcrypt-dev|libreadline8|libtinfo6|libpam.*|libaudit.*|libsemanage.*|libsepol2|libselinux1|libdebian-installer4|libnewt.*|libslang2|libtextwrap1|libcap-ng0|libnsl.*|libtirpc.*|rpcsvc-proto|libxml2.*|libicu.*|icu-devtools|catch2|krb5-multidev|libkrb5-dev|comerr-dev|libgssrpc4|libkadm5.*|libkdb5.*|libhiredis.*|libibverbs.*|ibverbs-providers|libnl-.*|libgloo0|libbsd-dev|libmd-dev|liblzma5|libbz2-1.0)$'

prepare() {
  command -v apt-get >/dev/null && command -v dpkg >/dev/null || { echo "gpu-check prepare: needs Debian's apt-get and dpkg" >&2; exit 2; }
  mkdir -p "$BUNDLE/debs"
  touch "$BUNDLE/.turnrl-gpu-bundle"
  local packages
  packages=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances \
               "${DEV_PACKAGES[@]}" | grep -v '^ ' | grep -v '^<' | sort -u | grep -Ev "$SKIP")
  echo "gpu-check prepare: $(echo "$packages" | wc -l) packages"
  (cd "$BUNDLE/debs" && rm -f ./*.deb && apt-get download -o APT::Sandbox::User=root $packages >/dev/null)
  [ "$(ls "$BUNDLE"/debs/*.deb | wc -l)" -eq "$(echo "$packages" | wc -l)" ] || { echo "gpu-check prepare: a download failed" >&2; exit 1; }
  rm -rf "$BUNDLE/prefix"
  unpack_debs
  echo "gpu-check prepare: copying ../shared and the sources"
  rm -rf "$BUNDLE/shared" "$BUNDLE/src"
  cp -a "$(cd "$ROOT/../shared" && pwd)" "$BUNDLE/shared"
  mkdir -p "$BUNDLE/src"
  # Tracked and untracked-but-not-ignored files: the working tree as it is, without builds or caches.
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c 'test -e "{}" && echo "{}"' |
     tar -cf - -T -) | tar -xf - -C "$BUNDLE/src"
  du -sh "$BUNDLE"/debs "$BUNDLE"/prefix "$BUNDLE"/shared "$BUNDLE"/src
  echo "gpu-check prepare: debs + shared + src (what a copy must carry; run unpacks the debs): $(du -sc "$BUNDLE"/debs "$BUNDLE"/shared "$BUNDLE"/src | tail -1 | cut -f1) KiB"
  echo "gpu-check prepare: done; on the GPU machine: bash $(basename "$BUNDLE")/src/tools/gpu-check.sh run"
}

# BUNDLE/debs -> BUNDLE/prefix (dpkg -x, or ar + tar where dpkg is missing), .pc files pointed there.
unpack_debs() {
  local prefix="$BUNDLE/prefix" deb
  mkdir -p "$prefix"
  for deb in "$BUNDLE"/debs/*.deb; do
    if command -v dpkg >/dev/null; then
      dpkg -x "$deb" "$prefix"
    else
      local tmp
      tmp=$(mktemp -d)
      (cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$prefix")
      rm -rf "$tmp"
    fi
  done
  echo "/usr" > "$prefix/.turnrl-prefix"
  relocate_prefix
}

# pkg-config files name absolute paths: point them at where the prefix is now.
relocate_prefix() {
  local prefix="$BUNDLE/prefix" was now
  was="$(cat "$prefix/.turnrl-prefix")"
  now="$(cd "$prefix" && pwd)/usr"
  [ "$was" = "$now" ] && return
  find "$prefix" -name '*.pc' -type f -print0 | xargs -0 -r sed -i "s|=$was\\b|=$now|g; s|-I$was/|-I$now/|g; s|-L$was/|-L$now/|g"
  echo "$now" > "$prefix/.turnrl-prefix"
}

run() {
  [ -d "$BUNDLE/src" ] || { echo "gpu-check run: $BUNDLE/src missing: run 'gpu-check.sh prepare' first" >&2; exit 2; }
  [ -d "$BUNDLE/prefix" ] || unpack_debs
  relocate_prefix
  local started=$SECONDS
  local torch_prefix="${TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')}"
  local abi
  abi=$(python3 -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))' 2>/dev/null || echo "?")
  local usr="$BUNDLE/prefix/usr" arch=x86_64-linux-gnu
  local lib="$usr/lib/$arch" build="$BUNDLE/build" jobs="${GPU_CHECK_JOBS:-$(nproc)}"
  echo "gpu-check: torch at $torch_prefix (cxx11 ABI: $abi); $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)"
  export PKG_CONFIG_PATH="$lib/pkgconfig:$usr/share/pkgconfig" PKG_CONFIG_LIBDIR="$lib/pkgconfig:$usr/share/pkgconfig"
  export PATH="$usr/bin:$PATH" LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Torch first: its own Gloo headers (if it ships them) win over Debian's.
  cmake -S "$BUNDLE/src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$torch_prefix/../..;$usr" -DCMAKE_LIBRARY_ARCHITECTURE=$arch \
    -DPKG_CONFIG_EXECUTABLE="$usr/bin/pkg-config" -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$lib -Wl,-rpath,$lib" \
    -DTURNRL_SHARED_DIR="$BUNDLE/shared" > "$BUNDLE/cmake.log" 2>&1 || { tail -40 "$BUNDLE/cmake.log"; exit 1; }
  cmake --build "$build" -j "$jobs" --target turnrl test_gpu 2>&1 | tail -3
  echo "gpu-check: built in $((SECONDS - started)) s"
  if [ "${GPU_CHECK_SKIP_TESTS:-0}" != 1 ]; then
    ctest --test-dir "$build" -L gpu --output-on-failure 2>&1 | tail -25
  fi

  # The training run: qwen2.5-0.5b's shape, random bf16-autocast weights, Verlog's batch.
  local work="$BUNDLE/run" iterations="${GPU_CHECK_ITERATIONS:-2}" reply="${GPU_CHECK_RESPONSE_TOKENS:-64}"
  rm -rf "$work"
  mkdir -p "$work"
  "$build/tools/turnrl" new-model --preset qwen2.5-0.5b --tokenizer "$BUNDLE/shared/tokenizers/qwen" --out "$work/model" >/dev/null
  sed -e "s|^  path: .*|  path: $work/model|" -e "s|^  max_response_tokens: .*|  max_response_tokens: $reply|" \
      -e "s|^  critic_warmup_iterations: .*|  critic_warmup_iterations: 0|" -e "s|^  eval_episodes: .*|  eval_episodes: 0|" \
      -e "s|^  checkpoint_every: .*|  checkpoint_every: 1000|" "$BUNDLE/src/configs/babyai.yaml" > "$work/config.yaml"
  local sampler=""
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$work/memory.log" 2>/dev/null &
    sampler=$!
  fi
  local status=0
  "$build/tools/turnrl" train --config "$work/config.yaml" --iterations "$iterations" --total-minutes "${GPU_CHECK_MINUTES:-5}" --out "$work/out" > "$work/train.log" 2>&1 || status=$?
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  tail -5 "$work/train.log"
  [ "$status" -eq 0 ] || { echo "gpu-check: training failed ($status)"; exit "$status"; }
  python3 - "$work/out/metrics.jsonl" "$work/memory.log" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
train = [l for l in lines if l.get("type") == "train"]
if not train:
    sys.exit("gpu-check: no train lines in metrics.jsonl")
last = train[-1]  # the first iteration pays for warm-up (cuBLAS handles, allocator growth)
s = last["seconds"]
reply_tokens = last["reply_tokens"] * last["turns"]
try:
    peak = max(int(x.split()[0]) for x in open(sys.argv[2]) if x.strip())
    peak = f"{peak / 1024:.1f} GiB (nvidia-smi, the whole GPU)"
except Exception:
    peak = "unknown (no nvidia-smi)"
print(f"gpu-check: iteration {last['iteration']}: {last['turns']} turns in {s['total']:.1f} s: {last['turns_per_s']:.2f} turns/s")
print(f"gpu-check: generation {reply_tokens / max(s['generate'], 1e-9):.0f} tokens/s ({reply_tokens:.0f} reply tokens in {s['generate']:.1f} s)")
print(f"gpu-check: update {reply_tokens / max(s['update'], 1e-9):.0f} reply tokens/s ({s['update']:.1f} s; scoring {s['scoring']:.1f} s)")
print(f"gpu-check: peak GPU memory {peak}")
EOF
  echo "gpu-check: done in $((SECONDS - started)) s"
}

case "$MODE" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: bash tools/gpu-check.sh prepare|run [BUNDLE]" >&2; exit 2 ;;
esac
