#!/usr/bin/env bash
# Build a real etcd and a real kube-apiserver from their published Go modules
# into tools/k8s/bin/, for berth's integration tests.
#
#   tools/k8s/build.sh                 # both binaries
#   tools/k8s/build.sh kube-apiserver  # only one
#   tools/k8s/build.sh --force         # rebuild even if bin/ or the cache has it
#
# A binary is rebuilt only when it is missing or its recorded stamp (version +
# hash of the wrapper module's go.mod/go.sum/main.go + ldflags) differs. A copy
# is kept in ${BERTH_TOOLS_CACHE:-$HOME/.cache/berth/tools}/<name>-<version>
# so that a fresh clone on the same machine (CI) copies instead of rebuilding.
# Versions come from the wrapper go.mod files; see tools/k8s/README.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN_DIR="$HERE/bin"
CACHE_DIR="${BERTH_TOOLS_CACHE:-${HOME:-$(cd ~ && pwd)}/.cache/berth/tools}"
MIN_GO_MINOR=26 # k8s.io/kubernetes v1.36 and etcd v3.6.16 both declare "go 1.26.0"

log() { printf '[tools/k8s] %s\n' "$*" >&2; }
die() { printf '[tools/k8s] error: %s\n' "$*" >&2; exit 1; }

force=0
targets=()
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    etcd|kube-apiserver) targets+=("$arg") ;;
    -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $arg (expected etcd, kube-apiserver or --force)" ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(etcd kube-apiserver)

# ---------------------------------------------------------------- versions
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2; exit} $1 == "require" && $2 == "go.etcd.io/etcd/server/v3" {print $3; exit}' "$HERE/etcd/go.mod")"
kube_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$HERE/kube-apiserver/go.mod")"
[[ -n "$etcd_version" ]] || die "cannot read the etcd version from $HERE/etcd/go.mod"
[[ -n "$kube_version" ]] || die "cannot read the k8s.io/kubernetes version from $HERE/kube-apiserver/go.mod"

# ---------------------------------------------------------------- helpers
stamp_of() { # moddir ldflags -> "version hash"
  local moddir="$1" ldflags="$2" version="$3"
  local h
  h="$( { cat "$moddir/go.mod" "$moddir/go.sum" "$moddir/main.go"; printf '%s' "$ldflags"; } | sha256sum | cut -c1-16)"
  printf '%s %s\n' "$version" "$h"
}

have_go=""
ensure_go() {
  [[ -n "$have_go" ]] && return 0
  if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
    PATH="/usr/local/go/bin:$PATH"
  fi
  if ! command -v go >/dev/null 2>&1; then
    die "Go >= 1.$MIN_GO_MINOR is needed to build etcd and kube-apiserver from their Go modules, and 'go' is not on PATH.
  Install a Go >= 1.$MIN_GO_MINOR toolchain (the project's machines ship one at /usr/local/go/bin: add it to PATH),
  or on Debian/Ubuntu 'apt-get install golang-go' only if your release packages Go >= 1.$MIN_GO_MINOR
  (Debian 12's golang-go is 1.19: too old). See tools/k8s/README.md and the project README."
  fi
  local gv minor
  gv="$(go env GOVERSION)"
  minor="$(printf '%s' "$gv" | sed -nE 's/^go1\.([0-9]+).*/\1/p')"
  if [[ -z "$minor" || "$minor" -lt "$MIN_GO_MINOR" ]]; then
    die "Go >= 1.$MIN_GO_MINOR is needed (found $gv at $(command -v go)): k8s.io/kubernetes $kube_version and etcd $etcd_version declare go 1.$MIN_GO_MINOR.0. See tools/k8s/README.md."
  fi
  have_go="$gv"
}

go_build() { # moddir out ldflags
  local moddir="$1" out="$2" ldflags="$3"
  # -mod=mod: resolve from go.mod/go.sum via the module proxy; GOTOOLCHAIN=local:
  # never fetch a toolchain; CGO off: static binaries as upstream ships them;
  # -p: one package per core (2 cores here), memory is not the constraint.
  ( cd "$moddir" &&
    GOFLAGS="-mod=mod -buildvcs=false" GOTOOLCHAIN=local CGO_ENABLED=0 \
      go build -p "${BERTH_GO_BUILD_JOBS:-$(nproc)}" -trimpath -ldflags "-s -w $ldflags" -o "$out" . )
}

install_atomic() { # src dst
  local tmp
  tmp="$(mktemp "$2.tmp.XXXXXX")"
  cp "$1" "$tmp"
  chmod 0755 "$tmp"
  mv -f "$tmp" "$2"
}

build_one() { # name version moddir ldflags
  local name="$1" version="$2" moddir="$3" ldflags="$4"
  local bin="$BIN_DIR/$name" cached="$CACHE_DIR/$name-$version" stamp
  stamp="$(stamp_of "$moddir" "$ldflags" "$version")"

  if [[ $force -eq 0 && -x "$bin" && "$(cat "$bin.stamp" 2>/dev/null)" == "$stamp" ]]; then
    log "$name $version is up to date ($bin)"
    return 0
  fi
  if [[ $force -eq 0 && -x "$cached" && "$(cat "$cached.stamp" 2>/dev/null)" == "$stamp" ]]; then
    log "$name $version: copying from cache $cached"
    install_atomic "$cached" "$bin"
    printf '%s\n' "$stamp" >"$bin.stamp"
    return 0
  fi

  ensure_go
  local minutes="about two minutes"
  [[ "$name" == kube-apiserver ]] && minutes="several minutes"
  log "building $name $version from Go modules with $have_go (first run takes $minutes)…"
  local start out
  start=$(date +%s)
  out="$(mktemp "$BIN_DIR/.$name.build.XXXXXX")"
  if ! go_build "$moddir" "$out" "$ldflags"; then
    rm -f "$out"
    die "building $name $version failed (see the go output above)"
  fi
  "$out" --version >/dev/null 2>&1 || { rm -f "$out"; die "the freshly built $name does not run ('$name --version' failed)"; }
  log "built $name $version in $(( $(date +%s) - start ))s"

  install_atomic "$out" "$cached"
  printf '%s\n' "$stamp" >"$cached.stamp"
  mv -f "$out" "$bin"
  chmod 0755 "$bin"
  printf '%s\n' "$stamp" >"$bin.stamp"
}

# ---------------------------------------------------------------- main
mkdir -p "$BIN_DIR" "$CACHE_DIR"

# One build at a time per cache (a developer session and CI may share the machine).
exec 9>"$CACHE_DIR/.build.lock"
if command -v flock >/dev/null 2>&1; then
  flock -n 9 || { log "another build holds $CACHE_DIR/.build.lock; waiting…"; flock 9; }
fi

for t in "${targets[@]}"; do
  case "$t" in
    etcd)
      build_one etcd "$etcd_version" "$HERE/etcd" ""
      ;;
    kube-apiserver)
      major="$(printf '%s' "$kube_version" | sed -E 's/^v([0-9]+)\..*/\1/')"
      minor="$(printf '%s' "$kube_version" | sed -E 's/^v[0-9]+\.([0-9]+)\..*/\1/')"
      # Same variables upstream's hack/lib/version.sh sets (no git commit is known
      # for a module build; buildDate keeps its default so the stamp is stable).
      ldf=""
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldf+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
      done
      build_one kube-apiserver "$kube_version" "$HERE/kube-apiserver" "${ldf# }"
      ;;
  esac
done

for t in "${targets[@]}"; do
  printf '%s\n' "$BIN_DIR/$t"
done
