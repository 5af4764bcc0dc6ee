#!/usr/bin/env bash
# Builds tools/tlog-verify/bin/tlog-verify (issue 38's interop check with golang.org/x/mod/sumdb/tlog) from the Go
# module cache or the Go module proxy this machine is configured with. Rebuilt only when main.go, go.mod or go.sum is
# newer than the binary; Go's build cache keeps a rebuild to a second or two. Prints the binary's path.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="$HERE/bin/tlog-verify"
command -v go >/dev/null || { echo "tools/tlog-verify: go is not on PATH (Go >= 1.22 builds it)" >&2; exit 1; }
if [[ -x "$BIN" && "$BIN" -nt "$HERE/main.go" && "$BIN" -nt "$HERE/go.mod" && "$BIN" -nt "$HERE/go.sum" ]]; then
  echo "$BIN"
  exit 0
fi
cd "$HERE"
go build -trimpath -o "$BIN" . >&2
echo "$BIN"
