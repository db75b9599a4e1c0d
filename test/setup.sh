#!/usr/bin/env bash
# What the tests need besides node_modules, installed once and cached (run by `npm test` first):
# - kube-apiserver + etcd (the test control plane) and kubeadm 1.30 / 1.36 (cluster prepare fixtures),
#   built from Go modules into ~/.cache/ccm-controlplane;
# - a real sshd for the `cluster prepare --ssh` tests: Debian's openssh-server, when missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

bash "$here/controlplane/build.sh"
CCM_K8S_VERSION=1.36.3 bash "$here/controlplane/build.sh" kubeadm
CCM_K8S_VERSION=1.30.14 bash "$here/controlplane/build.sh" kubeadm

if [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing openssh-server and openssh-client (Debian) for the ssh tests"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    openssh-server openssh-client
fi
