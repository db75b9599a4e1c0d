#!/usr/bin/env bash
# Builds real Kubernetes binaries for the tests, once per version:
#   bash test/controlplane/build.sh                      # kube-apiserver + etcd (the test control plane)
#   CCM_K8S_VERSION=1.30.14 bash test/controlplane/build.sh kubeadm
#   bash test/controlplane/build.sh kubectl               # runs the deploy page's commands (docs/deploy.md)
# Binaries are cached outside the repository, keyed by version, so a second run builds nothing.
set -euo pipefail

K8S_VERSION="${CCM_K8S_VERSION:-1.36.3}"
CACHE_ROOT="${CCM_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ccm-controlplane}"
OUT="$CACHE_ROOT/v$K8S_VERSION"
components=("$@")
[[ ${#components[@]} -gt 0 ]] || components=(kube-apiserver etcd)

missing=()
for c in "${components[@]}"; do [[ -x "$OUT/$c" ]] || missing+=("$c"); done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "${components[*]} v$K8S_VERSION cached in $OUT"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build the test control plane (https://go.dev/dl)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with local folders;
# a consumer must pin every one of them to the matching published v0.X.Y tag.
go mod init ccm.local/controlplane >/dev/null 2>&1
go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" > mod.json
k8s_dir="$(sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p' mod.json)"
staging_version="v0.${K8S_VERSION#1.}"  # 1.36.3 -> v0.36.3
{
  echo "require k8s.io/kubernetes v$K8S_VERSION"
  echo "replace ("
  sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$k8s_dir/go.mod" |
    sort -u | while read -r m; do echo "  $m => $m $staging_version"; done
  echo ")"
} >> go.mod
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
# Pull in the versions kubernetes itself was released against (etcd included).
go get "k8s.io/kubernetes@v$K8S_VERSION" >/dev/null
go mod tidy -e >/dev/null 2>&1 || true

minor=$(cut -d. -f2 <<<"$K8S_VERSION")
version_flags="-X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
version_flags+=" -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
mkdir -p "$OUT"
for c in "${missing[@]}"; do
  case "$c" in
    etcd) pkg=go.etcd.io/etcd/server/v3 ;;  # the etcd version kubernetes itself requires
    kube-apiserver | kubeadm | kubectl | kubelet | kube-controller-manager | kube-scheduler) pkg="k8s.io/kubernetes/cmd/$c" ;;
    *) echo "unknown component $c" >&2; exit 1 ;;
  esac
  echo "building $c for v$K8S_VERSION (minutes, once)..."
  # Written under a temporary name and renamed, so an interrupted build is never cached.
  build() { CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "-s -w $version_flags" -o "$OUT/$c.tmp.$$" "$pkg"; }
  # The checksum database does not know every old staging module (seen: k8s.io/kube-proxy v0.30.14);
  # the module proxy's copy is then taken as it is.
  build || GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}k8s.io" build
  mv "$OUT/$c.tmp.$$" "$OUT/$c"
done
echo "${components[*]} v$K8S_VERSION built into $OUT"
