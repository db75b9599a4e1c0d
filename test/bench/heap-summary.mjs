// Summarises a V8 heap snapshot (.heapsnapshot, as written by --heapsnapshot-signal or
// v8.writeHeapSnapshot): self size by object type and constructor, largest first. Used for the
// breakdown in docs/performance.md:
//   node test/bench/heap-summary.mjs file.heapsnapshot [rows]
import { readFileSync } from 'node:fs';

const [file, rows = '25'] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node test/bench/heap-summary.mjs <file.heapsnapshot> [rows]\n');
  process.exit(2);
}
const snap = JSON.parse(readFileSync(file, 'utf8'));
const fields = snap.snapshot.meta.node_fields;
const types = snap.snapshot.meta.node_types[0];
const width = fields.length;
const [TYPE, NAME, SIZE] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
const groups = new Map();
let total = 0;
for (let i = 0; i < snap.nodes.length; i += width) {
  const type = types[snap.nodes[i + TYPE]];
  const size = snap.nodes[i + SIZE];
  total += size;
  // Objects by constructor; strings, code, arrays and the rest by their type.
  const key =
    type === 'object' || type === 'closure' ? `${type} ${snap.strings[snap.nodes[i + NAME]]}` : type;
  const g = groups.get(key) ?? { count: 0, size: 0 };
  g.count++;
  g.size += size;
  groups.set(key, g);
}
const mb = (n) => (n / 1e6).toFixed(2);
console.log(`| what | count | self size (MB) |\n|---|---:|---:|`);
for (const [key, g] of [...groups].sort((a, b) => b[1].size - a[1].size).slice(0, Number(rows))) {
  console.log(`| ${key.replaceAll('|', '\\|').slice(0, 80)} | ${g.count} | ${mb(g.size)} |`);
}
console.log(`| total | ${snap.nodes.length / width} | ${mb(total)} |`);
