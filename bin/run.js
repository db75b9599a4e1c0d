#!/usr/bin/env node
// Written for any Node, so that an old one gets a clear answer instead of a crash deep in undici.
// Node's modules are imported only on the old-Node path: each static import here would cost every
// start (child_process alone is ~5 ms, and an ES import of node:fs loads its streams).

const NEEDED = 22;
const major = Number(process.versions.node.split('.')[0]);

if (major < NEEDED) {
  const { spawn } = await import('node:child_process');
  // The Node 24 that `npm test` / `npm run quickstart` install for this project (.ci/node), if present
  // and unchanged (bin/node24.js).
  const { node24 } = await import('./node24.js');
  const found = await node24();
  if (found.missing) {
    // Under sudo, CCM_TOOLS_DIR and XDG_CACHE_HOME are the caller's, and not looked in.
    const where = found.elevated ? ` (under sudo, ccm looks for it only at ${found.missing})` : '';
    process.stderr.write(
      `ccm: needs Node.js ${NEEDED} or newer, this is ${process.versions.node}; install Node 24 (e.g. \`bash .ci/node --bin-dir\` in this repository installs it from the npm registry) and run ccm with it${where}\n`,
    );
    process.exit(2);
  }
  if (found.refused) {
    process.stderr.write(`ccm: ${found.refused}\n`);
    process.exit(2);
  }
  const child = spawn(found.node, [process.argv[1], ...process.argv.slice(2)], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, CCM_SIGNALS_BY_IPC: '1' },
  });
  // Passed on for a signal sent to this process alone; a terminal's Ctrl-C reaches both, which the
  // commands take as one. Passed as a message, not as a signal: one that arrived while the command
  // was ending (its handlers gone) would kill it, and turn its exit 0 into 130.
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const signal of signals) {
    process.on(signal, () => {
      if (child.connected) child.send({ signal }, () => {});
    });
  }
  child.on('exit', (code, signal) => {
    if (code !== null) process.exit(code);
    // Ended by a signal: end the same way, so that the shell sees what it would without this wrapper.
    for (const s of signals) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    setTimeout(() => process.exit(1), 1000);
  });
} else {
  if (process.env.CCM_SIGNALS_BY_IPC && process.send) {
    // Started by the wrapper above: a signal it was sent is handled as if this process had been sent
    // it, by the command's handler or else as the signal would (it ends the process).
    delete process.env.CCM_SIGNALS_BY_IPC;
    process.on('message', (message) => {
      const signal = message?.signal;
      if (!['SIGINT', 'SIGTERM', 'SIGHUP'].includes(signal)) return;
      if (process.listenerCount(signal) > 0) process.emit(signal, signal);
      else process.kill(process.pid, signal);
    });
    process.channel?.unref();
  }
  // V8's compiled code for the bundle, so that a second start skips compiling it (docs/benchmarks.md, Start-up).
  // Node's default folder is in the shared temp folder, where another local user can plant code for
  // root's next `sudo ccm`: only a folder of our own is used, or none. NODE_DISABLE_COMPILE_CACHE=1
  // turns it off.
  const cache = privateCacheDir();
  if (cache) process.getBuiltinModule('node:module').enableCompileCache?.(cache);
  const { start } = await import('../dist/bundle/entry.js');
  await start(import.meta.url);
}

/**
 * $XDG_CACHE_HOME/ccm or ~/.cache/ccm, made 0700 when missing (only inside a folder of this user's:
 * never root-owned folders in the home of the user who ran sudo); undefined unless it is a real folder
 * (no symlink) of this user that nobody else can write, under folders nobody else can change
 * (owned by this user or root, not writable by others unless sticky, like /tmp).
 * process.getBuiltinModule reads node:fs without the start-up cost of an ES import of it.
 */
function privateCacheDir() {
  const { getBuiltinModule } = process;
  if (!getBuiltinModule || process.env.NODE_DISABLE_COMPILE_CACHE) return undefined;
  const fs = getBuiltinModule('node:fs');
  const path = getBuiltinModule('node:path');
  const euid = process.geteuid?.();
  const xdg = process.env.XDG_CACHE_HOME;
  const home = getBuiltinModule('node:os').homedir();
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(home, '.cache');
  try {
    // Nothing is made in a folder of someone else's: under root with the caller's HOME or
    // XDG_CACHE_HOME kept (sudo -E, su without -, doas keepenv), a root-owned ~/.cache (0700) would
    // lock the caller out of their own cache. The nearest folder that exists on the way to base/ccm
    // must be this user's, or no compile cache is used.
    let existing = path.join(base, 'ccm');
    while (!fs.existsSync(existing) && existing !== path.dirname(existing)) existing = path.dirname(existing);
    if (fs.statSync(existing).uid !== euid) return undefined;
    fs.mkdirSync(path.join(base, 'ccm'), { recursive: true, mode: 0o700 });
    // The folder checked is the one used: resolved once, so that a symlink on the way (base itself, or
    // a folder above it) swapped after the check cannot lead Node elsewhere.
    const real = fs.realpathSync(base);
    const dir = path.join(real, 'ccm');
    const own = fs.lstatSync(dir);
    if (!own.isDirectory() || own.uid !== euid || (own.mode & 0o077) !== 0) return undefined;
    for (let up = real; ; up = path.dirname(up)) {
      const st = fs.statSync(up);
      const sticky = (st.mode & 0o1000) !== 0;
      if ((st.uid !== euid && st.uid !== 0) || ((st.mode & 0o022) !== 0 && !sticky)) return undefined;
      if (up === path.dirname(up)) return dir;
    }
  } catch {
    return undefined;
  }
}
