#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd the tests run against, once per version.
# The binaries are cached outside the repository, keyed by version, so a second run builds nothing.
set -euo pipefail

K8S_VERSION="${CCM_K8S_VERSION:-1.36.3}"
CACHE_ROOT="${CCM_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ccm-controlplane}"
OUT="$CACHE_ROOT/v$K8S_VERSION"

if [[ -x "$OUT/kube-apiserver" && -x "$OUT/etcd" && -f "$OUT/.complete" ]]; then
  echo "control plane v$K8S_VERSION cached in $OUT"
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
)
GO
# Pull in the versions kubernetes itself was released against (etcd included).
go get "k8s.io/kubernetes@v$K8S_VERSION" >/dev/null
go mod tidy -e >/dev/null 2>&1 || true

mkdir -p "$OUT"
# Each binary is written under a temporary name and renamed, so an interrupted build is never cached.
if [[ ! -x "$OUT/kube-apiserver" ]]; then
echo "building kube-apiserver v$K8S_VERSION (about ten minutes on two cores, once)..."
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION")" \
  -o "$OUT/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
fi
if [[ ! -x "$OUT/etcd" ]]; then
# The etcd version kubernetes itself requires, not the newest one.
echo "building etcd $(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)..."
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3
mv "$OUT/etcd.tmp" "$OUT/etcd"
fi
touch "$OUT/.complete"
echo "control plane v$K8S_VERSION built into $OUT"
