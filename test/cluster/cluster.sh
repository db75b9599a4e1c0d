#!/usr/bin/env bash
# A real one-Node kubeadm cluster on this machine, for the tests that need a kubelet, a scheduler and a
# container runtime (test/cluster/*.test.ts):
#   bash test/cluster/cluster.sh build       # binaries (test/controlplane/build.sh) and images, cached
#   bash test/cluster/cluster.sh up          # idempotent: a healthy cluster is kept as it is
#   bash test/cluster/cluster.sh down        # idempotent: leaves the machine as `up` found it
#   bash test/cluster/cluster.sh watch PID   # runs `down` once PID has gone (a killed test run)
#   bash test/cluster/cluster.sh fingerprint # what `down` must leave as it was, one line a fact
#
# The machine has no systemd, no CAP_SYS_RESOURCE and cgroup v1, so:
# - bin/systemctl plays kubelet.service with kubeadm's 10-kubeadm.conf drop-in (kubeadm and `ccm cluster
#   prepare` restart the kubelet through it);
# - bin/runc-oom is containerd's runc: it raises a negative oomScoreAdj to 0, which runc could not set;
# - the kubelet runs with failCgroupV1: false and the cgroupfs driver.
# Network rule: Pod and Service traffic never leaves the machine. FORWARD drops everything between the
# Pod bridge and any other interface, OUTPUT rejects the Service CIDR, and the `kubernetes` Service alone
# is DNATed to the API server (there is no kube-proxy). These rules go in before containerd starts and
# stay until everything else is gone.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

K8S_VERSION="${CCM_K8S_VERSION:-1.36.3}"
CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}"
BIN="${CCM_CONTROLPLANE_CACHE:-$CACHE_HOME/ccm-controlplane}/v$K8S_VERSION"
IMAGES="$CACHE_HOME/ccm-cluster/v$K8S_VERSION"
STATE=/run/ccm-cluster            # pids, configs, sockets, logs, what was there before
DATA=/var/lib/ccm-cluster         # containerd's images and snapshots
REPO=localhost/ccm-cluster        # every image kubeadm asks for is tagged under this name
NODE_NAME=ccm-cp-1
NODE_BRIDGE=ccm-node0             # the Node's own address lives here, not on the machine's interface
NODE_IP=10.233.0.1
POD_BRIDGE=ccm-cni0
POD_CIDR=10.244.0.0/16
NODE_POD_CIDR=10.244.0.0/24       # the first range kube-controller-manager hands out
SERVICE_CIDR=10.96.0.0/12
KUBERNETES_SERVICE_IP=10.96.0.1
DROPIN_DIR=/usr/lib/systemd/system/kubelet.service.d
# What the kubelet and the bridge plugin change; restored on `down`.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
  kernel.keys.root_maxbytes net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.ipv6.conf.all.forwarding)
# Paths a cluster creates; those missing before `up` are removed by `down`.
CREATED=(/etc/kubernetes /var/lib/kubelet /var/lib/etcd /var/log/pods /var/log/containers /var/lib/cni
  /run/netns /run/containerd /etc/cni /opt/cni /var/lib/containerd /usr/lib/systemd/system/kubelet.service.d
  /usr/lib/systemd/system/kubelet.service /var/lib/dockershim /var/run/kubernetes)
CGROUP_ROOTS=(kubepods)

log() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }
export PATH="$here/bin:$BIN:/usr/sbin:/sbin:$PATH"
KUBECTL=("$BIN/kubectl" --kubeconfig "$STATE/admin.conf")

need_root() { [ "$(id -u)" -eq 0 ] || die "needs root (kubeadm, containerd, iptables)"; }

# --- build -------------------------------------------------------------------------------------------

images_list() { "$BIN/kubeadm" config images list --kubernetes-version "v$K8S_VERSION" --image-repository "$REPO" 2>/dev/null; }

build() {
  bash "$here/../controlplane/build.sh" kube-apiserver etcd kubeadm kubectl kubelet kube-controller-manager kube-scheduler
  bash "$here/../debian-packages.sh" containerd:containerd runc:runc containernetworking-plugins:/usr/lib/cni/bridge \
    buildah:buildah iptables:iptables gcc:gcc
  mkdir -p "$IMAGES"
  local missing=0 ref name
  for ref in $(images_list); do
    name="${ref##*/}"; name="${name%%:*}"
    case "$name" in coredns | kube-proxy) continue ;; esac
    [ -f "$IMAGES/$name.oci.tar" ] || missing=1
  done
  [ "$missing" = 0 ] && { log "images v$K8S_VERSION cached in $IMAGES"; return; }

  local work; work="$(mktemp -d)"
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  gcc -static -Os -o "$work/pause" "$here/pause.c"
  local store=(--storage-driver vfs --root "$work/storage" --runroot "$work/run")
  for ref in $(images_list); do
    name="${ref##*/}"; name="${name%%:*}"
    case "$name" in coredns | kube-proxy) continue ;; esac
    [ -f "$IMAGES/$name.oci.tar" ] && continue
    local bin="$BIN/$name"
    [ "$name" = pause ] && bin="$work/pause"
    log "image $ref"
    local c; c="$(buildah "${store[@]}" from --quiet scratch)"
    buildah "${store[@]}" copy --quiet "$c" "$bin" "/usr/local/bin/$name" >/dev/null
    buildah "${store[@]}" config --env PATH=/usr/local/bin --entrypoint "[\"/usr/local/bin/$name\"]" "$c"
    buildah "${store[@]}" commit --quiet "$c" "$ref" >/dev/null
    buildah "${store[@]}" push --quiet "$ref" "oci-archive:$IMAGES/$name.oci.tar.tmp.$$:$ref"
    mv "$IMAGES/$name.oci.tar.tmp.$$" "$IMAGES/$name.oci.tar"
  done
  buildah "${store[@]}" rm --all >/dev/null 2>&1 || true
  log "images v$K8S_VERSION built into $IMAGES"
}

# --- network -----------------------------------------------------------------------------------------

# Idempotent: each chain is flushed and filled again, each jump added once.
network_up() {
  ip link show "$NODE_BRIDGE" >/dev/null 2>&1 || ip link add "$NODE_BRIDGE" type bridge
  ip addr replace "$NODE_IP/24" dev "$NODE_BRIDGE"
  ip link set "$NODE_BRIDGE" up
  iptables -w -N CCM-CLUSTER-FORWARD 2>/dev/null || iptables -w -F CCM-CLUSTER-FORWARD
  iptables -w -A CCM-CLUSTER-FORWARD -i "$POD_BRIDGE" ! -o "$POD_BRIDGE" -j DROP
  iptables -w -A CCM-CLUSTER-FORWARD -o "$POD_BRIDGE" ! -i "$POD_BRIDGE" -j DROP
  iptables -w -C FORWARD -j CCM-CLUSTER-FORWARD 2>/dev/null || iptables -w -I FORWARD 1 -j CCM-CLUSTER-FORWARD
  iptables -w -N CCM-CLUSTER-OUTPUT 2>/dev/null || iptables -w -F CCM-CLUSTER-OUTPUT
  iptables -w -A CCM-CLUSTER-OUTPUT -d "$SERVICE_CIDR" -j REJECT
  iptables -w -C OUTPUT -j CCM-CLUSTER-OUTPUT 2>/dev/null || iptables -w -I OUTPUT 1 -j CCM-CLUSTER-OUTPUT
  iptables -w -t nat -N CCM-CLUSTER-SERVICES 2>/dev/null || iptables -w -t nat -F CCM-CLUSTER-SERVICES
  iptables -w -t nat -A CCM-CLUSTER-SERVICES -d "$KUBERNETES_SERVICE_IP/32" -p tcp --dport 443 \
    -j DNAT --to-destination "$NODE_IP:6443"
  for chain in OUTPUT PREROUTING; do
    iptables -w -t nat -C "$chain" -j CCM-CLUSTER-SERVICES 2>/dev/null ||
      iptables -w -t nat -I "$chain" 1 -j CCM-CLUSTER-SERVICES
  done
}

network_down() {
  for chain in OUTPUT PREROUTING; do
    while iptables -w -t nat -D "$chain" -j CCM-CLUSTER-SERVICES 2>/dev/null; do :; done
  done
  iptables -w -t nat -F CCM-CLUSTER-SERVICES 2>/dev/null && iptables -w -t nat -X CCM-CLUSTER-SERVICES
  while iptables -w -D OUTPUT -j CCM-CLUSTER-OUTPUT 2>/dev/null; do :; done
  iptables -w -F CCM-CLUSTER-OUTPUT 2>/dev/null && iptables -w -X CCM-CLUSTER-OUTPUT
  while iptables -w -D FORWARD -j CCM-CLUSTER-FORWARD 2>/dev/null; do :; done
  iptables -w -F CCM-CLUSTER-FORWARD 2>/dev/null && iptables -w -X CCM-CLUSTER-FORWARD
  # The kubelet's own chains (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT), where they were
  # not there before `up`.
  local cmd t chain
  for cmd in iptables ip6tables; do
    for t in filter nat mangle; do
      for chain in $("$cmd-save" -t "$t" 2>/dev/null | sed -n 's/^:\(KUBE-[A-Z0-9-]*\) .*/\1/p'); do
        grep -qx "$cmd $t $chain" "$STATE/chains.before" 2>/dev/null && continue
        "$cmd-save" -t "$t" | grep -E "^-A [A-Z0-9-]+ .*-j $chain( |\$)" | sed 's/^-A //' | while read -r rule; do
          eval "$cmd -w -t $t -D $rule" 2>/dev/null || true
        done
        "$cmd" -w -t "$t" -F "$chain" 2>/dev/null || true
        "$cmd" -w -t "$t" -X "$chain" 2>/dev/null || true
      done
    done
  done
  local link
  for link in "$POD_BRIDGE" "$NODE_BRIDGE"; do ip link del "$link" 2>/dev/null || true; done
  return 0
}

# --- processes ---------------------------------------------------------------------------------------

alive() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

stop_pid() { # name: TERM, then KILL after 10 s
  [ -f "$STATE/$1.pid" ] || return 0
  local pid; pid="$(cat "$STATE/$1.pid")"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$STATE/$1.pid"
}

containerd_config() {
  mkdir -p "$STATE/cni" "$DATA"
  cat >"$STATE/cni/10-ccm-cluster.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "ccm-cluster",
  "plugins": [
    { "type": "bridge", "bridge": "$POD_BRIDGE", "isGateway": true, "ipMasq": false,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "$NODE_POD_CIDR" }]], "routes": [{ "dst": "0.0.0.0/0" }] } }
  ]
}
JSON
  cat >"$STATE/containerd.toml" <<TOML
version = 2
root = "$DATA/containerd"
state = "$STATE/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$STATE/containerd.sock"
[ttrpc]
  address = "$STATE/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$DATA/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$(images_list | grep /pause:)"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$here/bin/runc-oom"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni"
TOML
}

containerd_up() {
  alive containerd && return 0
  containerd_config
  # Nothing is ever pulled: a pull goes to a proxy on a closed loopback port and fails at once, with no
  # name looked up, whatever image a test names.
  HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY="" \
    setsid containerd --config "$STATE/containerd.toml" </dev/null >>"$STATE/containerd.log" 2>&1 &
  echo $! >"$STATE/containerd.pid"
  for _ in $(seq 1 100); do
    ctr --address "$STATE/containerd.sock" version >/dev/null 2>&1 && break
    alive containerd || die "containerd exited: $(tail -n 3 "$STATE/containerd.log")"
    sleep 0.2
  done
  local tar
  for tar in "$IMAGES"/*.oci.tar; do import "$tar"; done
}

import() { # an OCI archive into the cluster's containerd, as an operator without a registry does
  [ -f "$1" ] || die "no image archive at $1"
  ctr --address "$STATE/containerd.sock" -n k8s.io images import "$1" >/dev/null
}

# Every process of the cluster (Pods' containers, shims, containerd), KILLed until none is left.
kill_all() {
  local pids
  for _ in $(seq 1 20); do
    pids="$(cluster_pids)"
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.25
  done
  log "still running after 5 s: $(cluster_pids | tr '\n' ' ')"
}

remove_cgroups() {
  local root dir
  for root in "${CGROUP_ROOTS[@]}"; do
    for dir in /sys/fs/cgroup/*/"$root"; do
      [ -d "$dir" ] || continue
      grep -qx "$dir" "$STATE/cgroups.before" 2>/dev/null && continue
      find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
  done
}

unmount_all() { # every mount under the cluster's folders, deepest first
  local prefixes=(/var/lib/kubelet "$STATE" "$DATA" /run/netns /run/containerd /var/lib/containerd) m p
  for _ in 1 2 3; do
    local any=0
    while read -r m; do
      for p in "${prefixes[@]}"; do
        case "$m" in "$p" | "$p"/*) umount -l "$m" 2>/dev/null || true; any=1 ;; esac
      done
    done < <(awk '{print $5}' /proc/self/mountinfo | sort -r)
    [ "$any" = 0 ] && break
  done
}

# --- up / down ---------------------------------------------------------------------------------------

healthy() {
  alive containerd && alive kubelet && [ -f "$STATE/admin.conf" ] &&
    "${KUBECTL[@]}" get --raw /readyz >/dev/null 2>&1 &&
    [ "$("${KUBECTL[@]}" get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] &&
    ! "${KUBECTL[@]}" get node "$NODE_NAME" -o jsonpath='{.spec.taints[*].key}' 2>/dev/null | grep -q node.kubernetes.io/not-ready
}

record_before() {
  mkdir -p "$STATE"
  : >"$STATE/created"
  local p
  for p in "${CREATED[@]}"; do [ -e "$p" ] || echo "$p" >>"$STATE/created"; done
  : >"$STATE/sysctl.before"
  for p in "${SYSCTLS[@]}"; do
    [ -e "/proc/sys/${p//.//}" ] && echo "$p=$(cat "/proc/sys/${p//.//}")" >>"$STATE/sysctl.before"
  done
  for p in "${CGROUP_ROOTS[@]}"; do ls -d /sys/fs/cgroup/*/"$p" 2>/dev/null; done >"$STATE/cgroups.before" || true
  local cmd t
  for cmd in iptables ip6tables; do
    for t in filter nat mangle; do
      "$cmd-save" -t "$t" 2>/dev/null | sed -n "s/^:\(KUBE-[A-Z0-9-]*\) .*/$cmd $t \1/p"
    done
  done >"$STATE/chains.before"
}

write_kubelet_unit() {
  mkdir -p "$DROPIN_DIR"
  # The drop-in the kubeadm package ships, as kubernetes/website shows it
  # (content/en/docs/setup/production-environment/tools/kubeadm/kubelet-integration.md),
  # with this build's kubelet.
  cat >"$DROPIN_DIR/10-kubeadm.conf" <<UNIT
# Written by ccm's test cluster (test/cluster/cluster.sh); removed by its \`down\`.
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=$BIN/kubelet \$KUBELET_KUBECONFIG_ARGS \$KUBELET_CONFIG_ARGS \$KUBELET_KUBEADM_ARGS \$KUBELET_EXTRA_ARGS
UNIT
}

kubeadm_config() {
  cat >"$STATE/kubeadm.yaml" <<YAML
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: $NODE_IP
  bindPort: 6443
nodeRegistration:
  name: $NODE_NAME
  criSocket: unix://$STATE/containerd.sock
  imagePullPolicy: Never
  kubeletExtraArgs:
    - name: node-ip
      value: $NODE_IP
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v$K8S_VERSION
imageRepository: $REPO
clusterName: ccm-test
networking:
  podSubnet: $POD_CIDR
  serviceSubnet: $SERVICE_CIDR
apiServer:
  certSANs: [$NODE_IP, 127.0.0.1]
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$STATE/containerd.sock
# A test machine's disk may be mostly full: never evict or collect images for that.
evictionHard: { memory.available: 100Mi, nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%" }
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
YAML
}

up() {
  need_root
  if [ -f "$STATE/owner" ]; then
    if healthy; then log "up (kept): $STATE/admin.conf"; return 0; fi
    log "a cluster of an earlier run is here but not healthy: taking it down first"
    down
  fi
  for p in /etc/kubernetes/manifests /var/lib/kubelet/config.yaml /var/lib/etcd/member "$DROPIN_DIR/10-kubeadm.conf"; do
    [ -e "$p" ] && die "$p exists: this machine already runs a cluster that is not ccm's test cluster; not touching it"
  done
  cluster_pids | grep -q . && die "processes of another cluster run here ($(cluster_pids | head -n 3 | tr '\n' ' ')); not touching them"
  build >/dev/null
  record_before
  echo "$$ $(date -u +%FT%TZ)" >"$STATE/owner"
  local t0=$SECONDS
  network_up
  containerd_up
  write_kubelet_unit
  kubeadm_config
  # /var/log/pods outlives `kubeadm reset`; a new cluster's static Pods would start with old restart counts.
  rm -rf /var/log/pods /var/log/containers
  if ! kubeadm init --config "$STATE/kubeadm.yaml" --skip-phases=addon/coredns,addon/kube-proxy \
    --ignore-preflight-errors=all >"$STATE/kubeadm-init.log" 2>&1; then
    tail -n 20 "$STATE/kubeadm-init.log" >&2
    die "kubeadm init failed (log above; the cluster is left for a look: \`cluster.sh down\` removes it)"
  fi
  cp /etc/kubernetes/admin.conf "$STATE/admin.conf"
  # One Node: plain Pods (and the tests' own) run beside the control plane, as on a single-Node kubeadm cluster.
  "${KUBECTL[@]}" taint nodes "$NODE_NAME" node-role.kubernetes.io/control-plane:NoSchedule- >/dev/null 2>&1 || true
  for _ in $(seq 1 240); do healthy && break; sleep 0.5; done
  healthy || die "the Node did not become Ready in 120 s: $(tail -n 5 "$STATE/kubelet.log" 2>/dev/null)"
  # kube-controller-manager leads (its DaemonSet, Job and node controllers run) before a test starts.
  for _ in $(seq 1 120); do
    [ -n "$("${KUBECTL[@]}" -n kube-system get lease kube-controller-manager -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" ] && break
    sleep 0.5
  done
  log "up in $((SECONDS - t0)) s: KUBECONFIG=$STATE/admin.conf"
}

down() {
  need_root
  if [ ! -f "$STATE/owner" ]; then log "down (nothing here)"; return 0; fi
  if [ -x "$BIN/kubeadm" ] && [ -S "$STATE/containerd.sock" ]; then
    kubeadm reset -f --cri-socket "unix://$STATE/containerd.sock" >"$STATE/kubeadm-reset.log" 2>&1 || true
  fi
  systemctl stop kubelet >/dev/null 2>&1 || true
  stop_pid kubelet
  stop_pid containerd
  kill_all
  unmount_all
  network_down
  remove_cgroups
  if [ -f "$STATE/sysctl.before" ]; then
    local line
    while read -r line; do
      [ -n "$line" ] && sysctl -q -w "$line" >/dev/null 2>&1 || true
    done <"$STATE/sysctl.before"
  fi
  if [ -f "$STATE/created" ]; then
    local p
    while read -r p; do [ -n "$p" ] && rm -rf "$p"; done <"$STATE/created"
  fi
  # Logs of the last cluster, for a look after a failed run; the cache is the tests', not the machine's.
  mkdir -p "$IMAGES/../last-logs" && cp "$STATE"/*.log "$IMAGES/../last-logs/" 2>/dev/null || true
  rm -rf "$STATE" "$DATA"
  log "down"
}

watch() { # parent pid: take the cluster down once it has gone
  local parent="$1"
  trap '' HUP
  while kill -0 "$parent" 2>/dev/null; do sleep 1; done
  [ -f "$STATE/owner" ] && down
}

# Processes of a kubeadm cluster on this machine: what reads kubeadm's folders or this harness's, and the
# Pods' sandboxes and shims (the test control plane of test/controlplane uses neither).
cluster_pids() {
  local d
  for d in /proc/[0-9]*; do
    [ "${d#/proc/}" = "$$" ] && continue
    case "$(cat "$d/comm" 2>/dev/null)" in pause | containerd-shim*) echo "${d#/proc/}"; continue ;; esac
    tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -qE "/etc/kubernetes|/var/lib/etcd|$STATE|$DATA" && echo "${d#/proc/}"
  done
  return 0
}

fingerprint() {
  echo "# processes"
  local pid
  for pid in $(cluster_pids); do cat "/proc/$pid/comm" 2>/dev/null; done | sort | uniq -c
  echo "# mounts"
  awk '{print $5}' /proc/self/mountinfo | sort
  echo "# links"
  ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
  echo "# iptables"
  local cmd t
  for cmd in iptables-save ip6tables-save; do
    for t in filter nat mangle raw; do "$cmd" -t "$t" 2>/dev/null | grep -v '^#' | sed 's/\[[0-9:]*\]//'; done
  done
  echo "# sysctls"
  for p in "${SYSCTLS[@]}"; do [ -e "/proc/sys/${p//.//}" ] && echo "$p=$(cat "/proc/sys/${p//.//}")"; done
  echo "# paths"
  for p in "${CREATED[@]}" "$STATE" "$DATA"; do [ -e "$p" ] && echo "$p"; done
  echo "# cgroups"
  for p in "${CGROUP_ROOTS[@]}"; do ls -d /sys/fs/cgroup/*/"$p" 2>/dev/null; done || true
}

case "${1:-}" in
  build) build ;;
  up) up ;;
  down) down ;;
  import) import "${2:?import needs an OCI archive}" ;;
  watch) watch "${2:?watch needs a pid}" ;;
  fingerprint) fingerprint ;;
  healthy) healthy ;;
  *) die "usage: cluster.sh build|up|down|import ARCHIVE|watch PID|fingerprint|healthy" ;;
esac
