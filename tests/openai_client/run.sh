#!/bin/sh
# Drives `turnrl serve` with the official OpenAI Node client (npm package `openai`): chat,
# streaming, n choices, a bad request. Usage: run.sh TURNRL NPM_DIR
# The package is installed once into NPM_DIR (a build-tree folder); without npm or a reachable
# registry the test is skipped (exit 77) with a message saying so.
set -eu
turnrl=$1
npm_dir=$2
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIPPED: node and npm are not installed (tools/setup.sh installs them)"
  exit 77
fi
if [ ! -f "$npm_dir/node_modules/openai/package.json" ]; then
  mkdir -p "$npm_dir"
  if ! npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error openai; then
    echo "SKIPPED: npm could not install the openai package (is the npm registry reachable?)"
    exit 77
  fi
fi
# ESM imports resolve against the script's folder: run a copy beside node_modules.
cp "$here/client_test.mjs" "$npm_dir/client_test.mjs"

work=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
"$turnrl" new-model --preset tiny --seed 5 --out "$work/tiny" >/dev/null
# The file exists before the server starts: the background shell may open it after the first poll.
: >"$work/serve.out"
"$turnrl" serve --model "$work/tiny" --port 0 >>"$work/serve.out" 2>&1 &
server=$!
base_url=""
for _ in $(seq 1 200); do
  base_url=$(sed -n 's/^listening on //p' "$work/serve.out")
  [ -n "$base_url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.out"; exit 1; }
  sleep 0.1
done
[ -n "$base_url" ] || { echo "turnrl serve did not start:"; cat "$work/serve.out"; exit 1; }
node "$npm_dir/client_test.mjs" "$base_url"
