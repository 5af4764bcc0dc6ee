#!/usr/bin/env bash
# Build a real etcd, kube-apiserver, kubelet, kube-scheduler and
# kube-controller-manager from their published Go modules into tools/k8s/bin/,
# for berth's integration tests and the real-node stack (stack.sh).
#
#   tools/k8s/build.sh                 # all five binaries
#   tools/k8s/build.sh kube-apiserver  # only some (etcd, kube-apiserver, kubelet,
#                                      # kube-scheduler, kube-controller-manager, node = the last three)
#   tools/k8s/build.sh --force         # rebuild even if bin/ or the cache has it
#
# A binary is rebuilt only when it is missing or its recorded stamp (version +
# hash of the wrapper module's go.mod/go.sum/main.go + ldflags) differs. A copy
# is kept in ${BERTH_TOOLS_CACHE:-$HOME/.cache/berth/tools}/<name>-<version>
# so that a fresh clone on the same machine (CI) copies instead of rebuilding.
# The Kubernetes binaries that are missing are built in ONE `go build` of the
# node/ module, so the packages they share compile once.
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
    etcd|kube-apiserver|kubelet|kube-scheduler|kube-controller-manager) targets+=("$arg") ;;
    node) targets+=(kubelet kube-scheduler kube-controller-manager) ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $arg (expected etcd, kube-apiserver, kubelet, kube-scheduler, kube-controller-manager, node or --force)" ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(etcd kube-apiserver kubelet kube-scheduler kube-controller-manager)

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

reuse() { # name stamp -> 0 when bin/ or the cache already holds this exact build
  local name="$1" stamp="$2" version="${2%% *}"
  local bin="$BIN_DIR/$name" cached="$CACHE_DIR/$name-$version"
  [[ $force -eq 0 ]] || return 1
  if [[ -x "$bin" && "$(cat "$bin.stamp" 2>/dev/null)" == "$stamp" ]]; then
    log "$name $version is up to date ($bin)"
    return 0
  fi
  if [[ -x "$cached" && "$(cat "$cached.stamp" 2>/dev/null)" == "$stamp" ]]; then
    log "$name $version: copying from cache $cached"
    install_atomic "$cached" "$bin"
    printf '%s\n' "$stamp" >"$bin.stamp"
    return 0
  fi
  return 1
}

install_built() { # name stamp freshly-built-file
  local name="$1" stamp="$2" out="$3" version="${2%% *}"
  "$out" --version >/dev/null 2>&1 || { rm -f "$out"; die "the freshly built $name does not run ('$name --version' failed)"; }
  install_atomic "$out" "$CACHE_DIR/$name-$version"
  printf '%s\n' "$stamp" >"$CACHE_DIR/$name-$version.stamp"
  mv -f "$out" "$BIN_DIR/$name"
  chmod 0755 "$BIN_DIR/$name"
  printf '%s\n' "$stamp" >"$BIN_DIR/$name.stamp"
}

build_one() { # name version moddir ldflags
  local name="$1" version="$2" moddir="$3" ldflags="$4"
  local stamp
  stamp="$(stamp_of "$moddir" "$ldflags" "$version")"
  reuse "$name" "$stamp" && return 0

  ensure_go
  log "building $name $version from Go modules with $have_go (first run takes about two minutes)…"
  local start out
  start=$(date +%s)
  out="$(mktemp "$BIN_DIR/.$name.build.XXXXXX")"
  if ! go_build "$moddir" "$out" "$ldflags"; then
    rm -f "$out"
    die "building $name $version failed (see the go output above)"
  fi
  log "built $name $version in $(( $(date +%s) - start ))s"
  install_built "$name" "$stamp" "$out"
}

# kube-apiserver keeps the stamp of its own wrapper module (kube-apiserver/), so the binaries cached before the node
# binaries existed stay valid. The node/ module builds it too, with the same main.go and the same version of every
# module kube-apiserver/go.mod pins (node/go.mod only adds the kubelet's and the controllers' modules); checked here,
# so that an apiserver built in the node build is the binary kube-apiserver/ describes.
node_module_agrees() {
  cmp -s "$HERE/kube-apiserver/main.go" "$HERE/node/kube-apiserver/main.go" ||
    die "node/kube-apiserver/main.go differs from kube-apiserver/main.go: keep them identical"
  local missing
  missing="$(grep -E '^[[:space:]]+[^[:space:]]+ (=> [^[:space:]]+ )?v[0-9]' "$HERE/kube-apiserver/go.mod" | sed 's#//.*##; s/[[:space:]]*$//' |
    while IFS= read -r line; do grep -qF -- "$line" "$HERE/node/go.mod" || printf '%s\n' "$line"; done)"
  [[ -z "$missing" ]] || die "node/go.mod does not pin these modules as kube-apiserver/go.mod does (run go mod tidy in node/ after changing a version):
$missing"
}

build_kubernetes() { # names… (a subset of kube-apiserver kubelet kube-scheduler kube-controller-manager)
  local major minor ldf name stamp
  major="$(printf '%s' "$kube_version" | sed -E 's/^v([0-9]+)\..*/\1/')"
  minor="$(printf '%s' "$kube_version" | sed -E 's/^v[0-9]+\.([0-9]+)\..*/\1/')"
  # Same variables upstream's hack/lib/version.sh sets (no git commit is known
  # for a module build; buildDate keeps its default so the stamp is stable).
  ldf=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  done
  ldf="${ldf# }"
  local node_version
  node_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$HERE/node/go.mod")"
  [[ "$node_version" == "$kube_version" ]] || die "node/go.mod pins k8s.io/kubernetes $node_version, kube-apiserver/go.mod $kube_version: they must match"

  local -A stamps=()
  local missing=()
  for name in "$@"; do
    [[ -z "${stamps[$name]:-}" ]] || continue
    if [[ "$name" == kube-apiserver ]]; then
      stamp="$(stamp_of "$HERE/kube-apiserver" "$ldf" "$kube_version")"
    else
      stamp="$kube_version $( { cat "$HERE/node/go.mod" "$HERE/node/go.sum" "$HERE/node/$name/main.go"; printf '%s' "$ldf"; } | sha256sum | cut -c1-16)"
    fi
    stamps[$name]="$stamp"
    reuse "$name" "$stamp" || missing+=("$name")
  done
  [[ ${#missing[@]} -gt 0 ]] || return 0

  node_module_agrees
  ensure_go
  log "building ${missing[*]} $kube_version from Go modules with $have_go in one go build (a first run takes 10–20 minutes on 2 cores)…"
  local start out pkgs=()
  start=$(date +%s)
  out="$(mktemp -d "$BIN_DIR/.kubernetes.build.XXXXXX")"
  for name in "${missing[@]}"; do pkgs+=("./$name"); done
  # One invocation: the packages the binaries share (api, apimachinery, client-go, apiserver, component-base…)
  # compile once and the two cores stay busy across all of them.
  if ! ( cd "$HERE/node" &&
    GOFLAGS="-mod=mod -buildvcs=false" GOTOOLCHAIN=local CGO_ENABLED=0 \
      go build -p "${BERTH_GO_BUILD_JOBS:-$(nproc)}" -trimpath -ldflags "-s -w $ldf" -o "$out/" "${pkgs[@]}" ); then
    rm -rf "$out"
    die "building ${missing[*]} $kube_version failed (see the go output above)"
  fi
  log "built ${missing[*]} $kube_version in $(( $(date +%s) - start ))s"
  for name in "${missing[@]}"; do install_built "$name" "${stamps[$name]}" "$out/$name"; done
  rm -rf "$out"
}

# ---------------------------------------------------------------- main
mkdir -p "$BIN_DIR" "$CACHE_DIR"

# One build at a time per cache (a developer session and CI may share the machine).
exec 9>"$CACHE_DIR/.build.lock"
if command -v flock >/dev/null 2>&1; then
  flock -n 9 || { log "another build holds $CACHE_DIR/.build.lock; waiting…"; flock 9; }
fi

kube_targets=()
for t in "${targets[@]}"; do
  case "$t" in
    etcd) build_one etcd "$etcd_version" "$HERE/etcd" "" ;;
    *) kube_targets+=("$t") ;;
  esac
done
[[ ${#kube_targets[@]} -eq 0 ]] || build_kubernetes "${kube_targets[@]}"

for t in "${targets[@]}"; do
  printf '%s\n' "$BIN_DIR/$t"
done
