#!/usr/bin/env node
// Written for any Node, so that an old one gets a clear answer instead of a crash deep in undici.
// Node's modules are imported only on the old-Node path: each static import here would cost every
// start (child_process alone is ~5 ms, and an ES import of node:fs loads its streams).

const NEEDED = 22;
const major = Number(process.versions.node.split('.')[0]);

if (major < NEEDED) {
  const { spawn } = await import('node:child_process');
  const { existsSync } = await import('node:fs');
  const { homedir } = await import('node:os');
  const { join } = await import('node:path');
  // The Node 24 that `npm test` / `npm run quickstart` install for this project (.ci/node), if present.
  const tools =
    process.env.CCM_TOOLS_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'ccm-tools');
  const node24 = join(tools, 'node24', 'node_modules', '.bin', 'node');
  if (!existsSync(node24)) {
    process.stderr.write(
      `ccm: needs Node.js ${NEEDED} or newer, this is ${process.versions.node}; install Node 24 (e.g. \`bash .ci/node --bin-dir\` in this repository installs it from the npm registry) and run ccm with it\n`,
    );
    process.exit(2);
  }
  const child = spawn(node24, [process.argv[1], ...process.argv.slice(2)], { stdio: 'inherit' });
  // Passed on for a signal sent to this process alone; a terminal's Ctrl-C reaches both, which the
  // commands take as one.
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const signal of signals) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (code !== null) process.exit(code);
    // Ended by a signal: end the same way, so that the shell sees what it would without this wrapper.
    for (const s of signals) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    setTimeout(() => process.exit(1), 1000);
  });
} else {
  // V8's compiled code for the bundle, kept in the system temp folder (Node's default) so that a
  // second start skips compiling it (README, Start-up). NODE_DISABLE_COMPILE_CACHE=1 turns it off.
  const { enableCompileCache } = await import('node:module');
  enableCompileCache?.();
  const { start } = await import('../dist/bundle/entry.js');
  await start(import.meta.url);
}
