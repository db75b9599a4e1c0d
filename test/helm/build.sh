#!/usr/bin/env bash
# Builds the real helm (helm.sh/helm/v3, pinned) for the chart's tests, once: cached beside the test
# control plane, keyed by version, so a second run builds nothing.
#   bash test/helm/build.sh        # prints the path of the binary on its last line
# Only the tests use helm (docs/libraries.md): ccm itself never runs it.
set -euo pipefail

HELM_VERSION="${CCM_HELM_VERSION:-3.22.0}"
CACHE_ROOT="${CCM_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ccm-controlplane}"
OUT="$CACHE_ROOT/helm-v$HELM_VERSION"
if [[ -x "$OUT/helm" ]]; then
  echo "$OUT/helm"
  exit 0
fi
command -v go >/dev/null || { echo "go is required to build helm for the tests (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$OUT"
echo "building helm v$HELM_VERSION (minutes, once)..." >&2
version_flags="-X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
# Written under a temporary name and renamed, so an interrupted build is never cached.
GOBIN="$OUT/.tmp.$$" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w $version_flags" \
  "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION" >&2
mv "$OUT/.tmp.$$/helm" "$OUT/helm"
rmdir "$OUT/.tmp.$$"
echo "$OUT/helm"
