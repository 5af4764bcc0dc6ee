#!/usr/bin/env bash
# scripts/up's build phase (issue 36), run from the checkout's root on the Node scripts/up chose: berth's runnable
# output (dist/src) and its dashboard (dist/web), each only when its sources changed, and printing one line:
#   build     berth 3 s, dashboard unchanged
#
# berth: esbuild transpiles every source file to dist/src (the same files `tsc -p tsconfig.build.json` emits: ES
# modules, .cts to .cjs, source maps), in ~3 s where tsc takes 20–90 s on 2 cores, because it only strips types. The
# type check is not lost: it stays in the test command (scripts/test) and `npm run build`, which the package ships.
# dashboard: Vite alone, without scripts/build-web's type check (the same reason).
# Each is skipped when a hash of its sources (the files git knows, the lock and the Node version) equals the one the
# last build left (dist/.up-src, dist/web/.up-src): a second run with unchanged sources writes nothing in dist/.
# Logs in $BERTH_UP_LOGS (scripts/up sets it), shown only when a build fails.
set -euo pipefail
logs=${BERTH_UP_LOGS:-${XDG_CACHE_HOME:-$HOME/.cache}/berth/up}
mkdir -p "$logs"

# step NAME COMMAND…: runs COMMAND with its output in $logs/NAME.log; on failure shows the log's tail and stops.
step() {
  local name=$1 started=$SECONDS
  shift
  if ! "$@" >"$logs/$name.log" 2>&1; then
    tail -40 "$logs/$name.log" >&2
    printf 'berth: %s failed after %s s (the whole log: %s)\n' "$name" "$((SECONDS - started))" "$logs/$name.log" >&2
    exit 1
  fi
  step_took=$((SECONDS - started))
}

src_hash() { { git ls-files -co --exclude-standard -- "$@" package-lock.json | sort | xargs -d '\n' sha1sum 2>/dev/null; node --version; } | sha1sum | cut -c1-40; }

transpile() {
  # Run as the executable it is: npm's install script swaps bin/esbuild for the native binary (an ELF that `node` cannot
  # read), while an install without scripts (scripts/up's) leaves the Node shim, which starts on the Node on PATH.
  local esbuild=(node_modules/esbuild/bin/esbuild) common=(--outdir=dist/src --outbase=src --platform=node --target=es2023 --sourcemap --log-level=warning)
  git ls-files -co --exclude-standard -- 'src/*.ts' ':!:src/**/*.test.ts' ':!:src/*.test.ts' | xargs -d '\n' "${esbuild[@]}" "${common[@]}" --format=esm
  git ls-files -co --exclude-standard -- 'src/*.cts' | xargs -d '\n' "${esbuild[@]}" "${common[@]}" --format=cjs --out-extension:.js=.cjs
}

build_src=$(src_hash src tsconfig.json tsconfig.build.json)
web_src=$(src_hash web)
if [ "$(cat dist/.up-src 2>/dev/null)" != "$build_src" ] || [ ! -f dist/src/cli/entry/main.js ]; then
  step build transpile
  echo "$build_src" >dist/.up-src
  built="berth ${step_took} s"
else
  built="berth unchanged"
fi
if [ "$(cat dist/web/.up-src 2>/dev/null)" != "$web_src" ] || [ ! -f dist/web/index.html ]; then
  step dashboard node node_modules/vite/bin/vite.js build --config web/vite.config.ts
  echo "$web_src" >dist/web/.up-src
  built="$built, dashboard ${step_took} s"
else
  built="$built, dashboard unchanged"
fi
printf 'berth: build     %s\n' "$built"
