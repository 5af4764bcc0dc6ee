#!/usr/bin/env bash
# A real single-node Kubernetes for berth's tests and for people: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, containerd + runc + CNI bridge and a kubelet, all inside a private network + mount namespace. Only
# the apiserver is reachable from the host, on 127.0.0.1:<port>. Images are built here (no registry, no internet).
#
#   tools/k8s/stack.sh up     # start; prints the env file's path; `. "$(tools/k8s/stack.sh env)"` for KUBECONFIG etc.
#   tools/k8s/stack.sh down   # stop everything, restore the host's sysctls, remove the cgroups and the state
#   tools/k8s/stack.sh env    # the env file's path (exit 1 when the stack is not up)
#   tools/k8s/stack.sh kubelet-stop|kubelet-start   # take the node away and bring it back (its pods keep running)
#   tools/k8s/stack.sh check  # exit 0 when this machine can run it, else print why and exit 2
#   tools/k8s/stack.sh images # build the two images (cached by busybox's version) and print their digests
#
# Environment: BERTH_STACK_DIR (state, default /tmp/berth-node), BERTH_STACK_PORT (host port of the apiserver,
# default a free one), BERTH_STACK_CGROUP (cgroup name under every v1 hierarchy, default berth-node),
# KEEP=1 (down keeps the logs in $BERTH_STACK_DIR.logs). The facts behind every setting: tools/k8s/README.md.
set -euo pipefail -o errtrace

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="$HERE/bin"
R="${BERTH_STACK_DIR:-/tmp/berth-node}"
CG="${BERTH_STACK_CGROUP:-berth-node}"
NODE=berth-node
NODE_IP=10.87.0.1
# Inside the namespace every port is fixed: the namespace is the stack's own.
API_IN=6443
REGISTRY_PORT=5000
SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)

log() { printf '[stack] %s\n' "$*" >&2; }
die() { printf '[stack] error: %s\n' "$*" >&2; exit 1; }
now_ms() { date +%s%3N; }

# ------------------------------------------------------------------ can this machine run it?
check() {
  local why=()
  [[ "$(id -u)" == 0 ]] || why+=("not root (the stack needs network + mount namespaces, cgroups and sysctls)")
  for b in etcd kube-apiserver kubelet kube-scheduler kube-controller-manager; do
    [[ -x "$BIN/$b" ]] || why+=("$BIN/$b is missing: run tools/k8s/build.sh")
  done
  for c in containerd ctr containerd-shim-runc-v2 runc socat busybox gcc openssl unshare nsenter setsid iptables ip curl jq node; do
    command -v "$c" >/dev/null 2>&1 || why+=("'$c' is not installed (Debian: containerd runc containernetworking-plugins socat busybox-static iptables gcc libc6-dev jq)")
  done
  # The image holds busybox alone: it must be the static build.
  if command -v busybox >/dev/null 2>&1 && ldd "$(command -v busybox)" >/dev/null 2>&1; then why+=("$(command -v busybox) is dynamically linked (Debian: busybox-static)"); fi
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] || why+=("the CNI plugins are missing in /usr/lib/cni (Debian: containernetworking-plugins)")
  if [[ "$(id -u)" == 0 ]] && ! unshare --net --mount -- true 2>/dev/null; then why+=("cannot create a network + mount namespace here (unshare --net --mount failed)"); fi
  [[ -d /sys/fs/cgroup ]] || why+=("no /sys/fs/cgroup")
  if [[ ${#why[@]} -gt 0 ]]; then printf '%s\n' "${why[@]}"; return 2; fi
  return 0
}

# ------------------------------------------------------------------ helpers
pid_alive() { # a zombie (reparented to PID 1, reaped late) counts as gone
  local pid="$1" state
  [[ -r "/proc/$pid/stat" ]] || return 1
  state="$(sed -E 's/^[0-9]+ \(.*\) ([A-Z]) .*/\1/' "/proc/$pid/stat" 2>/dev/null)" || return 1
  [[ "$state" != Z && "$state" != X ]]
}
saved_pid() { cat "$R/pids/$1" 2>/dev/null || true; }
in_ns() { nsenter -t "$(saved_pid holder)" -n -m -- "$@"; }
# Start a daemon in the namespace. Not inside a function run with `&`: then $! would be a subshell and the daemon
# would survive its kill. nsenter and setsid both exec in place, so $! is the daemon itself.
spawn_in_ns() { # name command…
  local name="$1"; shift
  nsenter -t "$(saved_pid holder)" -n -m -- setsid "$@" </dev/null >"$R/logs/$name.log" 2>&1 &
  echo $! >"$R/pids/$name"
}
wait_until() { # what timeout-seconds command…
  local what="$1" timeout="$2"; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s) < deadline )) || { log "$what: not ready after ${timeout}s"; return 1; }
    sleep 0.1
  done
}
curl_api() { # path (host side, admin identity)
  curl -sf --max-time 5 --cacert "$R/pki/ca.crt" --cert "$R/pki/admin.crt" --key "$R/pki/admin.key" "https://127.0.0.1:$(cat "$R/port")$1"
}
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

# ------------------------------------------------------------------ PKI (ECDSA P-256: fast to make, accepted everywhere)
mkpki() {
  local d="$R/pki"
  mkdir -p "$d"
  (
    cd "$d"
    ossl() { openssl "$@" 2>/dev/null >/dev/null; }
    ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 7 \
      -subj /CN=berth-node-ca -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature
    issue() { # name subject usage [san]
      ossl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
      { echo basicConstraints=critical,CA:FALSE; echo keyUsage=critical,digitalSignature,keyEncipherment
        echo "extendedKeyUsage=$3"; [[ -z "${4:-}" ]] || echo "subjectAltName=$4"; } >"$1.ext"
      ossl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 7 -extfile "$1.ext"
      rm -f "$1.csr" "$1.ext"
    }
    issue serving /CN=kube-apiserver serverAuth IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1
    issue admin /O=system:masters/CN=berth-admin clientAuth
    # A real node identity, so the Node authorizer lets the kubelet read only its own pods' Secrets.
    issue kubelet /O=system:nodes/CN=system:node:$NODE clientAuth
    issue kubelet-serving /CN=$NODE serverAuth IP:$NODE_IP,DNS:$NODE
    issue apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client clientAuth
    issue controller-manager /CN=system:kube-controller-manager clientAuth
    issue scheduler /CN=system:kube-scheduler clientAuth
    ossl ecparam -name prime256v1 -genkey -noout -out sa.key
    ossl ec -in sa.key -pubout -out sa.pub
  )
}

kubeconfig() { # file user server
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: berth-node
  cluster:
    server: $3
    certificate-authority: $R/pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $R/pki/$2.crt
    client-key: $R/pki/$2.key
contexts:
- name: berth-node
  context: {cluster: berth-node, user: $2, namespace: default}
current-context: berth-node
EOF
  chmod 600 "$1"
}

# ------------------------------------------------------------------ images: busybox (static) and a C pause, both OCI
IMAGES="${BERTH_TOOLS_CACHE:-${HOME:-/root}/.cache/berth/tools}/node-images"

# OUT.tar NAME:TAG ROOTFS CMD_JSON -> prints the manifest digest. Deterministic: same inputs, same bytes.
mkimage() {
  local out="$1" ref="$2" rootfs="$3" cmd="$4" work layer cfg man idx
  work="$(mktemp -d)"
  mkdir -p "$work/blobs/sha256"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -C "$rootfs" -cf "$work/layer.tar" .
  layer="$(sha256sum "$work/layer.tar" | cut -d' ' -f1)"
  mv "$work/layer.tar" "$work/blobs/sha256/$layer"
  jq -cSn --argjson cmd "$cmd" --arg diff "sha256:$layer" \
    '{architecture:"amd64",os:"linux",config:{Cmd:$cmd,Env:["PATH=/bin:/usr/bin:/sbin"],WorkingDir:"/"},rootfs:{type:"layers",diff_ids:[$diff]}}' \
    | tr -d '\n' >"$work/config.json"
  cfg="$(sha256sum "$work/config.json" | cut -d' ' -f1)"
  mv "$work/config.json" "$work/blobs/sha256/$cfg"
  jq -cSn --arg cfg "sha256:$cfg" --argjson cs "$(stat -c %s "$work/blobs/sha256/$cfg")" \
    --arg layer "sha256:$layer" --argjson ls "$(stat -c %s "$work/blobs/sha256/$layer")" \
    '{schemaVersion:2,mediaType:"application/vnd.oci.image.manifest.v1+json",
      config:{mediaType:"application/vnd.oci.image.config.v1+json",digest:$cfg,size:$cs},
      layers:[{mediaType:"application/vnd.oci.image.layer.v1.tar",digest:$layer,size:$ls}]}' | tr -d '\n' >"$work/manifest.json"
  man="$(sha256sum "$work/manifest.json" | cut -d' ' -f1)"
  jq -cSn --arg man "sha256:$man" --argjson ms "$(stat -c %s "$work/manifest.json")" --arg name "$ref" --arg tag "${ref##*:}" \
    '{schemaVersion:2,manifests:[{mediaType:"application/vnd.oci.image.manifest.v1+json",digest:$man,size:$ms,
      annotations:{"io.containerd.image.name":$name,"org.opencontainers.image.ref.name":$tag}}]}' | tr -d '\n' >"$work/index.json"
  mv "$work/manifest.json" "$work/blobs/sha256/$man"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci-layout"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -cf "$out" oci-layout index.json blobs
  rm -rf "$work"
  printf 'sha256:%s\n' "$man"
}

# berth's pods carry no command (§14): what the container does is the image's Cmd, so each harness behaviour the
# tests need is its own image over the same busybox layer. Names are `berth.invalid/harness:<behaviour>`.
HARNESSES=(
  # up: prints one line, then waits; exits 0 on SIGTERM (a harness that drains at once)
  'agent|trap "exit 0" TERM; echo "berth-node harness up as $(id -u)"; sleep 2147483647 & wait'
  # stubborn: ignores SIGTERM, so only the end of the grace period (SIGKILL) stops it
  'stubborn|trap "" TERM; echo "berth-node harness up, ignoring SIGTERM"; while :; do sleep 1; done'
  # crash: exits 3 at once (a harness that cannot start)
  'crash|echo "berth-node harness failed to start"; exit 3'
)

build_images() {
  mkdir -p "$IMAGES"
  local bb_version key root entry name script digest
  bb_version="$(dpkg-query -W -f '${Version}' busybox-static 2>/dev/null || busybox 2>&1 | head -1)"
  key="$(printf '%s\n%s' "$bb_version" "$(sha256sum "$HERE/node-image/pause.c" "${BASH_SOURCE[0]}")" | sha256sum | cut -c1-16)"
  if [[ -s "$IMAGES/$key.env" ]]; then cp "$IMAGES/$key.env" "$R/images.env"; return 0; fi
  local env="$IMAGES/.$key.env.tmp"
  : >"$env"
  root="$(mktemp -d)"
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/proc" "$root/sys" "$root/dev"
  chmod 1777 "$root/tmp"
  cp "$(command -v busybox)" "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do [[ "$applet" == busybox ]] || ln -s busybox "$root/bin/$applet"; done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  for entry in "${HARNESSES[@]}"; do
    name="${entry%%|*}"; script="${entry#*|}"
    digest="$(mkimage "$IMAGES/$name-$key.tar" "berth.invalid/harness:$name" "$root" "$(jq -cn --arg s "$script" '["/bin/sh","-c",$s]')")"
    printf 'image %s %s %s\n' "$name" "$IMAGES/$name-$key.tar" "$digest" >>"$env"
  done
  rm -rf "$root"
  root="$(mktemp -d)"
  gcc -static -O2 -s -o "$root/pause" "$HERE/node-image/pause.c"
  digest="$(mkimage "$IMAGES/pause-$key.tar" berth.invalid/pause:1 "$root" '["/pause"]')"
  printf 'pause pause %s %s\n' "$IMAGES/pause-$key.tar" "$digest" >>"$env"
  rm -rf "$root"
  mv "$env" "$IMAGES/$key.env"
  cp "$IMAGES/$key.env" "$R/images.env"
}

import_images() {
  local ctr=(ctr --address "$R/containerd/containerd.sock" -n k8s.io) kind name tar digest repo tag
  while read -r kind name tar digest; do
    "${ctr[@]}" images import "$tar" >/dev/null
    if [[ "$kind" == pause ]]; then repo=berth.invalid/pause; tag=1; else repo=berth.invalid/harness; tag="$name"; fi
    # containerd 1.6's CRI does not resolve name@digest from a tag record: without this reference it would pull.
    "${ctr[@]}" images tag --force "$repo:$tag" "$repo@$digest" >/dev/null
  done <"$R/images.env"
}

# ------------------------------------------------------------------ configuration files
write_configs() {
  mkdir -p "$R/containerd/certs.d/berth.invalid" "$R/containerd/certs.d/registry.berth.invalid" "$R/cni/net.d" "$R/kubelet" "$R/pod-logs"
  cat >"$R/containerd/config.toml" <<EOF
version = 2
root = "$R/containerd/root"
state = "$R/containerd/state"
# The host lacks CAP_SYS_RESOURCE: no process here may lower its oom_score_adj (see restrict_oom_score_adj below).
oom_score = 0
[grpc]
  address = "$R/containerd/containerd.sock"
[ttrpc]
  address = "$R/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$R/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "berth.invalid/pause:1"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  netns_mounts_under_state_dir = true
  # runc's nsexec fails with "failed to update /proc/self/oom_score_adj: Permission denied" otherwise.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$R/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$R/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$R/containerd/certs.d"
EOF
  # berth.invalid: a closed port, so a missing image fails at once (connection refused), never leaves the machine.
  printf 'server = "http://127.0.0.1:1"\n[host."http://127.0.0.1:1"]\n  capabilities = ["pull", "resolve"]\n' \
    >"$R/containerd/certs.d/berth.invalid/hosts.toml"
  # registry.berth.invalid: the tiny registry (node-image/registry.mjs) answering 404 and 401.
  printf 'server = "http://127.0.0.1:%s"\n[host."http://127.0.0.1:%s"]\n  capabilities = ["pull", "resolve"]\n' "$REGISTRY_PORT" "$REGISTRY_PORT" \
    >"$R/containerd/certs.d/registry.berth.invalid/hosts.toml"
  cat >"$R/cni/net.d/10-berth.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "berth", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$R/cni/ipam", "ranges": [[{"subnet": "10.88.0.0/16"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  # Pods resolve names through 127.0.0.1 of their own namespace: nothing answers, nothing leaves.
  echo "nameserver 127.0.0.1" >"$R/resolv.conf"
  cat >"$R/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# kubelet 1.36 refuses cgroup v1 unless told otherwise, and this kind of host mounts only v1 controllers.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$CG
cgroupsPerQOS: true
containerRuntimeEndpoint: unix://$R/containerd/containerd.sock
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $R/pki/kubelet-serving.crt
tlsPrivateKeyFile: $R/pki/kubelet-serving.key
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: $R/pki/ca.crt}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
# The default -999 needs CAP_SYS_RESOURCE, which this host does not grant.
oomScoreAdj: 0
resolvConf: $R/resolv.conf
podLogsDir: $R/pod-logs
serializeImagePulls: false
shutdownGracePeriod: 0s
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
syncFrequency: 10s
# A stopped kubelet is noticed in seconds (the node-NotReady row), not in the default 40-50 s.
nodeStatusUpdateFrequency: 2s
nodeStatusReportFrequency: 2s
nodeLeaseDurationSeconds: 8
EOF
  local port
  port="$(cat "$R/port")"
  kubeconfig "$R/admin.kubeconfig" admin "https://127.0.0.1:$port"
  kubeconfig "$R/kubelet.kubeconfig" kubelet "https://127.0.0.1:$API_IN"
  kubeconfig "$R/controller-manager.kubeconfig" controller-manager "https://127.0.0.1:$API_IN"
  kubeconfig "$R/scheduler.kubeconfig" scheduler "https://127.0.0.1:$API_IN"
}

holder_script() {
  cat >"$R/holder.sh" <<EOF
set -e
# Mounts made here stay here: the host sees only the empty mount-point directories.
mount --make-rshared /
# Paths containerd, the kubelet and libcni hard-code, whatever their configuration says.
for d in /run/containerd /var/lib/kubelet /var/log/containers /var/lib/cni; do
  mkdir -p "\$d"; mount -t tmpfs -o mode=0755 tmpfs "\$d"
done
ip link set lo up
# The node IP cannot be loopback (the kubelet refuses it), and this kernel has no dummy device: an empty bridge.
ip link add berth0 type bridge
ip addr add $NODE_IP/32 dev berth0
ip link set berth0 up
echo ready
exec sleep 2147483647
EOF
}

start_kubelet() {
  # The binaries of the checkout that started the stack, whichever checkout runs kubelet-start.
  local bin
  bin="$(cat "$R/bin-dir" 2>/dev/null || printf '%s' "$BIN")"
  spawn_in_ns kubelet "$bin/kubelet" --config="$R/kubelet-config.yaml" --kubeconfig="$R/kubelet.kubeconfig" \
    --root-dir="$R/kubelet" --hostname-override=$NODE --node-ip=$NODE_IP --v=1
}

cgroup_hierarchies() { awk '$3 == "cgroup" {print $2}' /proc/self/mounts; }
# runc also makes the containers' cgroups in the (otherwise empty) cgroup2 `unified` mount of a hybrid host.
all_cgroup_hierarchies() { awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/self/mounts; }

# ------------------------------------------------------------------ up
up() {
  local t0 t
  t0=$(now_ms)
  if [[ -f "$R/pids/holder" ]] && pid_alive "$(saved_pid holder)"; then die "a stack is already up in $R (tools/k8s/stack.sh down first)"; fi
  local why
  why="$(check)" || die "this machine cannot run the node stack:
$why"
  rm -rf "$R"
  mkdir -p "$R/pids" "$R/logs"
  echo "${BERTH_STACK_PORT:-$(free_port)}" >"$R/port"
  printf '%s\n' "$BIN" >"$R/bin-dir"
  trap 'log "start failed; stopping what was started (logs: $R/logs)"; KEEP=1 down >/dev/null 2>&1 || true; exit 1' ERR

  mkpki
  build_images
  holder_script
  setsid unshare --net --mount --propagation slave -- bash "$R/holder.sh" </dev/null >"$R/logs/holder.log" 2>&1 &
  echo $! >"$R/pids/holder"
  wait_until "namespace holder" 10 grep -qx ready "$R/logs/holder.log"

  # The kubelet's cgroup root, in every v1 hierarchy; cpuset needs cpus and mems before a task may join.
  local h
  for h in $(cgroup_hierarchies); do
    mkdir -p "$h/$CG"
    if [[ -f "$h/cpuset.cpus" ]]; then cat "$h/cpuset.cpus" >"$h/$CG/cpuset.cpus"; cat "$h/cpuset.mems" >"$h/$CG/cpuset.mems"; fi
  done
  # The kubelet rewrites these host-wide sysctls (they are not namespaced); down puts them back.
  local s
  for s in "${SYSCTLS[@]}"; do printf '%s=%s\n' "$s" "$(sysctl -n "$s")"; done >"$R/sysctls"

  write_configs
  spawn_in_ns etcd "$BIN/etcd" --name=berth-node --data-dir="$R/etcd" \
    --listen-client-urls=http://127.0.0.1:2379 --advertise-client-urls=http://127.0.0.1:2379 \
    --listen-peer-urls=http://127.0.0.1:2380 --initial-advertise-peer-urls=http://127.0.0.1:2380 \
    --initial-cluster=berth-node=http://127.0.0.1:2380 --unsafe-no-fsync=true --log-level=warn
  spawn_in_ns containerd containerd --config "$R/containerd/config.toml"
  spawn_in_ns registry node "$HERE/node-image/registry.mjs" "$REGISTRY_PORT"
  wait_until etcd 30 in_ns curl -sf http://127.0.0.1:2379/health
  t=$(now_ms); log "etcd ready after $(( t - t0 )) ms"

  spawn_in_ns kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=$API_IN --cert-dir="$R/apiserver-certs" \
    --tls-cert-file="$R/pki/serving.crt" --tls-private-key-file="$R/pki/serving.key" --client-ca-file="$R/pki/ca.crt" \
    --service-account-key-file="$R/pki/sa.pub" --service-account-signing-key-file="$R/pki/sa.key" \
    --service-account-issuer=https://localhost --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --disable-admission-plugins=ServiceAccount \
    --kubelet-client-certificate="$R/pki/apiserver-kubelet-client.crt" --kubelet-client-key="$R/pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$R/pki/ca.crt" --kubelet-preferred-address-types=InternalIP
  # The host reaches the apiserver through two socats meeting on a unix socket (a socket file crosses namespaces).
  spawn_in_ns socat-ns socat "UNIX-LISTEN:$R/api.sock,fork,mode=600" "TCP:127.0.0.1:$API_IN"
  setsid socat "TCP-LISTEN:$(cat "$R/port"),bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$R/api.sock" </dev/null >"$R/logs/socat-host.log" 2>&1 &
  echo $! >"$R/pids/socat-host"
  wait_until "containerd" 30 ctr --address "$R/containerd/containerd.sock" version
  import_images
  wait_until "kube-apiserver /readyz" 90 bash -o pipefail -c "curl_api /readyz | grep -qx ok" 
  wait_until "the default namespace" 30 curl_api /api/v1/namespaces/default
  t=$(now_ms); log "kube-apiserver ready after $(( t - t0 )) ms"

  start_kubelet
  # --use-service-account-credentials: as system:kube-controller-manager the node-lifecycle controller may not
  # update Nodes, so the not-ready taint would never be lifted and the scheduler would bind nothing.
  spawn_in_ns kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$R/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$R/controller-manager.kubeconfig" --authorization-kubeconfig="$R/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10257 --use-service-account-credentials=true \
    --service-account-private-key-file="$R/pki/sa.key" --root-ca-file="$R/pki/ca.crt" \
    --cluster-signing-cert-file="$R/pki/ca.crt" --cluster-signing-key-file="$R/pki/ca.key" --leader-elect=false "--controllers=*,-nodeipam" \
    --node-monitor-period=1s --node-monitor-grace-period=10s
  spawn_in_ns kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$R/scheduler.kubeconfig" \
    --authentication-kubeconfig="$R/scheduler.kubeconfig" --authorization-kubeconfig="$R/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false
  # jq 1.6's -e exits 0 on empty input: pipefail makes a failed curl count.
  wait_until "node $NODE Ready" 60 bash -o pipefail -c \
    "curl_api /api/v1/nodes/$NODE | jq -e '.status.conditions[] | select(.type == \"Ready\") | .status == \"True\"' | grep -qx true"
  t=$(now_ms); log "node Ready after $(( t - t0 )) ms"
  wait_until "the node's not-ready taint lifted" 60 bash -o pipefail -c "curl_api /api/v1/nodes/$NODE | jq -e '(.spec.taints // []) | length == 0' | grep -qx true"
  trap - ERR
  t=$(now_ms)

  {
    printf 'export KUBECONFIG=%q\n' "$R/admin.kubeconfig"
    printf 'export BERTH_NODE_SERVER=%q\n' "https://127.0.0.1:$(cat "$R/port")"
    printf 'export BERTH_NODE_NAME=%q\n' "$NODE"
    printf 'export BERTH_NODE_DIR=%q\n' "$R"
    local kind name tar digest
    while read -r kind name tar digest; do
      if [[ "$kind" == pause ]]; then printf 'export BERTH_NODE_PAUSE_IMAGE=%q\n' "berth.invalid/pause@$digest"
      else printf 'export BERTH_NODE_IMAGE_%s=%q\n' "${name^^}" "berth.invalid/harness@$digest"; fi
    done <"$R/images.env"
    printf 'export BERTH_NODE_REGISTRY=%q\n' "registry.berth.invalid"
    printf 'export BERTH_NODE_CONTAINERD=%q\n' "$R/containerd/containerd.sock"
    printf 'export BERTH_NODE_CGROUP=%q\n' "$CG"
    printf 'export BERTH_NODE_HOLDER_PID=%q\n' "$(saved_pid holder)"
    printf 'export BERTH_NODE_START_MS=%q\n' "$(( t - t0 ))"
  } >"$R/env"
  log "up in $(( t - t0 )) ms (KUBECONFIG=$R/admin.kubeconfig)"
  printf '%s\n' "$R/env"
}

export -f curl_api
export R

# ------------------------------------------------------------------ down
stop_pid() { # name signal grace-seconds
  local pid
  pid="$(saved_pid "$1")"
  [[ -n "$pid" ]] || return 0
  pid_alive "$pid" || return 0
  kill -"$2" "$pid" 2>/dev/null || true
  local deadline=$(( $(now_ms) + $3 * 1000 ))
  while pid_alive "$pid" && (( $(now_ms) < deadline )); do sleep 0.05; done
  pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
  while pid_alive "$pid"; do sleep 0.05; done
}

netns_pids() { # every process in the holder's network namespace but the holder itself
  local holder ns
  holder="$(saved_pid holder)"
  [[ -n "$holder" ]] && pid_alive "$holder" || return 0
  ns="$(readlink "/proc/$holder/ns/net" 2>/dev/null)" || return 0
  # One stat over every process (a readlink per process is seconds on a busy machine).
  stat -c '%N' /proc/[0-9]*/ns/net 2>/dev/null | grep -F "'$ns'" | sed -nE 's#^.?/proc/([0-9]+)/ns/net.*#\1#p' | grep -vx "$holder" || true
}

down() {
  [[ -d "$R" ]] || { log "nothing to stop in $R"; return 0; }
  local t0 t
  t0=$(now_ms)
  # The kubelet first: alive, it restarts the containers being killed.
  local n
  for n in kube-scheduler kube-controller-manager kubelet; do stop_pid "$n" TERM 3; done
  log "down: controllers and kubelet stopped after $(( $(now_ms) - t0 )) ms"
  if [[ -S "$R/containerd/containerd.sock" ]] && pid_alive "$(saved_pid containerd)"; then
    local ctr=(ctr --address "$R/containerd/containerd.sock" -n k8s.io) id
    for id in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    for id in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks delete -f "$id" >/dev/null 2>&1 || true; done
  fi
  log "down: containers killed after $(( $(now_ms) - t0 )) ms"
  for n in containerd registry socat-ns socat-host; do stop_pid "$n" TERM 2; done
  # The state is thrown away: no need to wait for the apiserver's drain.
  for n in kube-apiserver etcd; do stop_pid "$n" TERM 2; done
  log "down: daemons stopped after $(( $(now_ms) - t0 )) ms"
  # Orphaned shims and container processes (a shim outlives containerd by design).
  local p left
  for p in $(netns_pids); do kill -KILL "$p" 2>/dev/null || true; done
  for _ in $(seq 100); do left="$(netns_pids)"; [[ -z "$left" ]] && break; for p in $left; do kill -KILL "$p" 2>/dev/null || true; done; sleep 0.05; done
  # The holder last: its namespaces go with it, and with them cni0, the veths, the iptables rules and every mount.
  stop_pid holder KILL 1
  log "down: namespace holder gone after $(( $(now_ms) - t0 )) ms"
  # Pod processes not in the node's network namespace (each pod has its own) are still in the kubelet's cgroups.
  local h dirs
  for h in $(all_cgroup_hierarchies); do
    [[ -d "$h/$CG" ]] || continue
    for _ in $(seq 100); do
      left="$(find "$h/$CG" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)"
      [[ -z "$left" ]] && break
      for p in $left; do kill -KILL "$p" 2>/dev/null || true; done
      sleep 0.05
    done
    dirs="$(find "$h/$CG" -depth -type d 2>/dev/null)"
    for _ in $(seq 50); do
      for d in $dirs; do rmdir "$d" 2>/dev/null || true; done
      [[ -d "$h/$CG" ]] || break
      sleep 0.1
    done
    [[ ! -d "$h/$CG" ]] || log "could not remove $h/$CG"
  done
  if [[ -f "$R/sysctls" ]]; then
    local line
    while IFS= read -r line; do sysctl -qw "$line" >/dev/null || log "could not restore $line"; done <"$R/sysctls"
  fi
  if [[ "${KEEP:-}" == 1 ]]; then rm -rf "$R.logs"; cp -a "$R/logs" "$R.logs" 2>/dev/null || true; fi
  rm -rf "$R"
  t=$(now_ms)
  log "down in $(( t - t0 )) ms"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  env) [[ -f "$R/env" ]] && pid_alive "$(saved_pid holder)" && printf '%s\n' "$R/env" || { log "no stack is up in $R"; exit 1; } ;;
  check) check ;;
  # For the node-NotReady row: the kubelet stops (its containers keep running), then comes back.
  kubelet-stop) stop_pid kubelet TERM 3 ;;
  kubelet-start) pid_alive "$(saved_pid kubelet)" || start_kubelet ;;
  images) mkdir -p "$R"; build_images; cat "$R/images.env"; rm -f "$R/images.env"; rmdir "$R" 2>/dev/null || true ;;
  *) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
