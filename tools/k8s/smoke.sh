#!/usr/bin/env bash
# Smoke test: start the etcd and kube-apiserver built by tools/k8s/build.sh on
# loopback, with throw-away certificates, and create / get / delete a Pod with
# curl. Every process it starts is stopped on exit.
#
#   tools/k8s/smoke.sh            # builds (or reuses) the binaries first
#   KEEP=1 tools/k8s/smoke.sh     # keep the temp dir (certs, logs) for a look
#
# Needs: openssl, curl, and python3 or ss to find free ports.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="$HERE/bin"

log() { printf '[smoke] %s\n' "$*" >&2; }
die() { printf '[smoke] FAIL: %s\n' "$*" >&2; exit 1; }

for tool in openssl curl; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is needed (apt-get install $tool)"
done

"$HERE/build.sh" >/dev/null

WORK="$(mktemp -d "${TMPDIR:-/tmp}/berth-k8s-smoke.XXXXXX")"
etcd_pid=""
apiserver_pid=""

stop() { # pid name
  local pid="$1" name="$2" i
  [[ -n "$pid" ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name ($pid) did not stop on SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  stop "$apiserver_pid" kube-apiserver
  stop "$etcd_pid" etcd
  if [[ $rc -ne 0 ]]; then
    for f in etcd.log kube-apiserver.log; do
      [[ -f "$WORK/$f" ]] && { log "--- last lines of $f ---"; tail -n 25 "$WORK/$f" >&2; }
    done
  fi
  if [[ "${KEEP:-0}" == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
    return
  fi
  local p
  while :; do
    p=$(( 20000 + RANDOM % 30000 ))
    ss -ltnH "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
  done
}

# ------------------------------------------------------------ certificates
log "generating CA, serving cert, admin client cert (O=system:masters), SA key in $WORK/pki"
PKI="$WORK/pki"
mkdir -p "$PKI"
(
  cd "$PKI"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
    -subj "/CN=berth-test-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null

  openssl req -new -newkey rsa:2048 -nodes -keyout serving.key -out serving.csr \
    -subj "/CN=kube-apiserver" 2>/dev/null
  printf '%s\n' \
    "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1" \
    >serving.ext
  openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
    -out serving.crt -days 2 -extfile serving.ext 2>/dev/null

  openssl req -new -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr \
    -subj "/O=system:masters/CN=berth-admin" 2>/dev/null
  printf '%s\n' \
    "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=clientAuth" \
    >admin.ext
  openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
    -out admin.crt -days 2 -extfile admin.ext 2>/dev/null

  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
)

# ------------------------------------------------------------ etcd
ETCD_CLIENT_PORT="$(free_port)"
ETCD_PEER_PORT="$(free_port)"
while [[ "$ETCD_PEER_PORT" == "$ETCD_CLIENT_PORT" ]]; do ETCD_PEER_PORT="$(free_port)"; done
ETCD_URL="http://127.0.0.1:$ETCD_CLIENT_PORT"

log "starting etcd on $ETCD_URL"
t0=$(date +%s%N)
"$BIN/etcd" \
  --name=berth-test \
  --data-dir="$WORK/etcd" \
  --listen-client-urls="$ETCD_URL" \
  --advertise-client-urls="$ETCD_URL" \
  --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster="berth-test=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync=true \
  --log-level=warn \
  >"$WORK/etcd.log" 2>&1 &
etcd_pid=$!

for _ in $(seq 1 100); do
  kill -0 "$etcd_pid" 2>/dev/null || die "etcd exited early"
  curl -fsS "$ETCD_URL/health" 2>/dev/null | grep -q '"health":"true"' && break
  sleep 0.1
done
curl -fsS "$ETCD_URL/health" | grep -q '"health":"true"' || die "etcd not healthy after 10s"
log "etcd healthy after $(( ($(date +%s%N) - t0) / 1000000 )) ms"

# ------------------------------------------------------------ kube-apiserver
API_PORT="$(free_port)"
while [[ "$API_PORT" == "$ETCD_CLIENT_PORT" || "$API_PORT" == "$ETCD_PEER_PORT" ]]; do API_PORT="$(free_port)"; done
API="https://127.0.0.1:$API_PORT"

# Keep this list in sync with tools/k8s/README.md ("Working flag set").
APISERVER_FLAGS=(
  --etcd-servers="$ETCD_URL"
  --bind-address=127.0.0.1
  --advertise-address=127.0.0.1
  --secure-port="$API_PORT"
  --tls-cert-file="$PKI/serving.crt"
  --tls-private-key-file="$PKI/serving.key"
  --client-ca-file="$PKI/ca.crt"
  --service-account-key-file="$PKI/sa.pub"
  --service-account-signing-key-file="$PKI/sa.key"
  --service-account-issuer=https://localhost
  --service-cluster-ip-range=10.0.0.0/24
  --authorization-mode=RBAC
  --disable-admission-plugins=ServiceAccount
  --allow-privileged=true
)

log "starting kube-apiserver on $API"
t0=$(date +%s%N)
"$BIN/kube-apiserver" "${APISERVER_FLAGS[@]}" >"$WORK/kube-apiserver.log" 2>&1 &
apiserver_pid=$!

CURL=(curl -sS --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key")

ready=""
for _ in $(seq 1 600); do
  kill -0 "$apiserver_pid" 2>/dev/null || die "kube-apiserver exited early"
  if [[ "$("${CURL[@]}" "$API/readyz" 2>/dev/null || true)" == ok ]]; then ready=1; break; fi
  sleep 0.1
done
[[ -n "$ready" ]] || { "${CURL[@]}" "$API/readyz?verbose" >&2 || true; die "kube-apiserver not ready after 60s"; }
log "kube-apiserver /readyz ok after $(( ($(date +%s%N) - t0) / 1000000 )) ms"

version_json="$("${CURL[@]}" "$API/version")"
git_version="$(printf '%s' "$version_json" | sed -nE 's/.*"gitVersion": *"([^"]+)".*/\1/p')"
log "server /version gitVersion=$git_version"
[[ "$git_version" == v1.* ]] || die "unexpected /version: $version_json"

# The "default" namespace is created by a controller inside the apiserver,
# shortly after it reports ready.
for _ in $(seq 1 100); do
  [[ "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$API/api/v1/namespaces/default")" == 200 ]] && break
  sleep 0.1
done

POD_URL="$API/api/v1/namespaces/default/pods"
POD_JSON='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"berth-smoke"},"spec":{"containers":[{"name":"main","image":"berth-smoke:never-pulled"}]}}'

code="$("${CURL[@]}" -o "$WORK/create.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data "$POD_JSON" "$POD_URL")"
[[ "$code" == 201 ]] || { cat "$WORK/create.json" >&2; die "create Pod: HTTP $code"; }
log "created Pod default/berth-smoke (HTTP $code)"

code="$("${CURL[@]}" -o "$WORK/get.json" -w '%{http_code}' "$POD_URL/berth-smoke")"
[[ "$code" == 200 ]] || { cat "$WORK/get.json" >&2; die "get Pod: HTTP $code"; }
grep -q '"uid"' "$WORK/get.json" || die "get Pod: no uid in response"
log "got Pod default/berth-smoke (HTTP $code, phase $(sed -nE 's/.*"phase": *"([^"]+)".*/\1/p' "$WORK/get.json" | head -n1))"

code="$("${CURL[@]}" -o "$WORK/delete.json" -w '%{http_code}' -X DELETE "$POD_URL/berth-smoke")"
[[ "$code" == 200 || "$code" == 202 ]] || { cat "$WORK/delete.json" >&2; die "delete Pod: HTTP $code"; }
gone=""
for _ in $(seq 1 50); do
  [[ "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$POD_URL/berth-smoke")" == 404 ]] && { gone=1; break; }
  sleep 0.1
done
[[ -n "$gone" ]] || die "Pod still present after delete"
log "deleted Pod default/berth-smoke (HTTP $code, then 404)"

log "OK: etcd $("$BIN/etcd" --version | sed -nE 's/^etcd Version: //p') + kube-apiserver $git_version work together"
