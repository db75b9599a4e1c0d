#!/usr/bin/env bash
# What the tests need besides node_modules, installed once and cached (run by `npm test` first):
# - kube-apiserver + etcd (the test control plane), kube-scheduler + kube-controller-manager (rollouts
#   of the generated workload) and kubeadm 1.30 / 1.36 (cluster prepare fixtures),
#   built from Go modules into ~/.cache/ccm-controlplane, and kubectl of the same version (the deploy
#   page's commands pipe into it), and helm (the chart's tests), built the same way;
# - Debian's openssh-server/-client (the `cluster prepare --ssh` tests), tmux (prompts in a real
#   terminal), containerd (the image imported as on a Node), iputils-ping (the routes test's pings
#   between network namespaces), qemu-user-static (the image test runs the arm64 image under it),
#   binutils (readelf: `npm run image` reads the libraries node links), skopeo (the image index), and
#   zsh and fish (`ccm completion` in each shell), when missing. `npm run image` itself installs
#   buildah and adds Debian's arm64 architecture (for apt-get download) when missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

bash "$here/controlplane/build.sh"
bash "$here/controlplane/build.sh" kubectl
# The scheduler and the workload controllers, to roll out the DaemonSet of `ccm manifests`.
bash "$here/controlplane/build.sh" kube-scheduler kube-controller-manager
CCM_K8S_VERSION=1.36.3 bash "$here/controlplane/build.sh" kubeadm
CCM_K8S_VERSION=1.30.14 bash "$here/controlplane/build.sh" kubeadm
# The real helm, for the chart's tests (charts/ccm): lint, template, install and upgrade.
bash "$here/helm/build.sh" >/dev/null

# The real kubeadm cluster's binaries and images (test/cluster), and the Debian packages it runs on.
bash "$here/cluster/cluster.sh" build

# Debian packages: a real sshd and client for the ssh tests, tmux for the prompts in a real terminal,
# containerd and ctr to import the image as a Node without a registry does, ping for Pod traffic,
# qemu-user-static to run the image of the other architecture, readelf to build the image, skopeo for
# the deploy page's line that shows the image index, the shells `ccm completion` writes for (bash is
# Debian's own).
bash "$here/debian-packages.sh" openssh-server:/usr/sbin/sshd openssh-client:ssh tmux:tmux containerd:containerd \
  iputils-ping:ping qemu-user-static:qemu-aarch64-static binutils:readelf skopeo:skopeo zsh:zsh fish:fish
