#!/usr/bin/env bash
# Installs the Debian packages named as `package:command` (the command that shows it is there) that are
# missing; with sudo unless root.
set -euo pipefail
missing=()
for wanted in "$@"; do
  command -v "${wanted#*:}" >/dev/null || [ -x "${wanted#*:}" ] || missing+=("${wanted%%:*}")
done
[ ${#missing[@]} -gt 0 ] || exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing ${missing[*]} (Debian) for the tests"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
