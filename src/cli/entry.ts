/**
 * The entry of the bundle bin/run.js starts (dist/bundle/entry.js, made by build/bundle.mjs):
 * oclif's execute, and every command for oclif's "explicit" discovery (package.json), so that oclif
 * imports this one module instead of globbing dist/commands. Each command imports what it needs
 * when it runs; those imports are chunks of their own.
 */
import { execute } from '@oclif/core/execute';
import type { Logger } from '@oclif/core/interfaces';
import { settings } from '@oclif/core/settings';
import ClusterPrepare from '../commands/cluster/prepare.js';
import Completion from '../commands/completion.js';
import Doctor from '../commands/doctor.js';
import Help from '../commands/help.js';
import Manifests from '../commands/manifests.js';
import Migrate from '../commands/migrate.js';
import NodesInit from '../commands/nodes/init.js';
import NodesList from '../commands/nodes/list.js';
import Run from '../commands/run.js';
import SecretCreate from '../commands/secret/create.js';
import Version from '../commands/version.js';
import { endProcess } from './end-process.js';

export { commandNotFound } from './command-not-found.js';
export { CcmHelp } from './help.js';

export const COMMANDS = {
  'cluster:prepare': ClusterPrepare,
  completion: Completion,
  doctor: Doctor,
  help: Help,
  manifests: Manifests,
  migrate: Migrate,
  'nodes:init': NodesInit,
  'nodes:list': NodesList,
  run: Run,
  'secret:create': SecretCreate,
  version: Version,
};

/**
 * bin/run.js: oclif's execute, told the package root and given its package.json, so that oclif does
 * not walk up from bin/ reading each package.json it meets through fs/promises (~5 ms of each start).
 */
export async function start(bin: string): Promise<void> {
  // Through getBuiltinModule (Node ≥ 22.3): an ES import of node:fs would build its facade first.
  const { readFileSync } = process.getBuiltinModule?.('node:fs') ?? (await import('node:fs'));
  const { fileURLToPath } = process.getBuiltinModule?.('node:url') ?? (await import('node:url'));
  const root = fileURLToPath(new URL('..', bin)).replace(/[\\/]$/, '');
  const pjson = JSON.parse(readFileSync(`${root}/package.json`, 'utf8'));
  // ccm runs its built bundle whatever NODE_ENV says: with NODE_ENV=test or development oclif would
  // otherwise register tsx to run src/ (loading child_process, crypto and workers to start).
  settings.enableAutoTranspile = false;
  // A reader that stops reading (`ccm help run | head -1`) ends ccm quietly, with the status a
  // SIGPIPE would give. stdout is destroyed, which fails the writes still pending (a pending write
  // would leave oclif's promise unsettled), and the process ends as every other (end-process.ts).
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ERR_STREAM_DESTROYED') return;
    if (error.code !== 'EPIPE') throw error;
    process.stdout.destroy();
    endProcess(128 + 13);
  });
  // No user or dev plugins: oclif would run what $XDG_DATA_HOME/ccm/package.json lists, as root under sudo.
  await execute({
    loadOptions: {
      root,
      pjson,
      userPlugins: false,
      devPlugins: false,
      ...(process.env.DEBUG ? {} : { logger: silent('oclif') }),
    },
  });
}

/**
 * oclif's debug log when DEBUG is not set, where it prints nothing: oclif's own logger would load the
 * debug package (~3 ms of each start) to find that out. With DEBUG set, oclif logs as it always does.
 */
function silent(namespace: string): Logger {
  const nothing = () => {};
  return {
    namespace,
    child: (ns) => silent(`${namespace}:${ns}`),
    debug: nothing,
    error: nothing,
    info: nothing,
    trace: nothing,
    warn: nothing,
  };
}
