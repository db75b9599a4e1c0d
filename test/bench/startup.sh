#!/usr/bin/env bash
# Start-up time of the built CLI against a bare Node start, on the Node 24 that .ci/node installs.
#   npm run build && bash test/bench/startup.sh
# "--help" is each command's help; "start" runs the command up to its first configuration error
# (a kubeconfig that does not exist), which loads everything the command imports before it reads.
set -euo pipefail
cd "$(dirname "$0")/../.."
node="${CCM_BENCH_NODE:-$HOME/.cache/ccm-tools/node24/node_modules/.bin/node}"
command -v hyperfine >/dev/null || { echo "hyperfine is missing: apt-get install hyperfine" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
bad="--kubeconfig /nonexistent/kubeconfig"
hyperfine --warmup 3 --runs "${RUNS:-20}" -N --ignore-failure --export-json "$out/startup.json" \
  -n 'node -e 0' "$node -e 0" \
  -n 'ccm --help' "$node bin/run.js --help" \
  -n 'ccm nodes init --help' "$node bin/run.js nodes init --help" \
  -n 'ccm nodes list --help' "$node bin/run.js nodes list --help" \
  -n 'ccm doctor --help' "$node bin/run.js doctor --help" \
  -n 'ccm run --help' "$node bin/run.js run --help" \
  -n 'start: nodes init' "$node bin/run.js nodes init --provider cloudlycke $bad" \
  -n 'start: nodes list' "$node bin/run.js nodes list --provider cloudlycke $bad" \
  -n 'start: doctor' "$node bin/run.js doctor $bad" \
  -n 'start: manifests' "$node bin/run.js manifests --provider digitalocean" \
  -n 'start: run' "$node bin/run.js run --provider cloudlycke $bad" \
  -n 'start: cluster prepare' "$node bin/run.js cluster prepare --provider cloudlycke $bad" >&2
"$node" -e '
const r = require(process.argv[1]).results;
const base = r[0].median;
console.log(`load average ${require("os").loadavg().map((l) => l.toFixed(1)).join(" ")}, ${require("os").cpus().length} CPUs\n`);
console.log("| command | median | × bare node |\n|---|---|---|");
for (const x of r) console.log(`| \`${x.command}\` | ${(x.median * 1000).toFixed(0)} ms | ${(x.median / base).toFixed(1)}× |`);
' "$out/startup.json"
