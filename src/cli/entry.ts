/**
 * The entry of the bundle bin/run.js starts (dist/bundle/entry.js, made by build/bundle.mjs):
 * oclif's execute, and every command for oclif's "explicit" discovery (package.json), so that oclif
 * imports this one module instead of globbing dist/commands. Each command imports what it needs
 * when it runs; those imports are chunks of their own.
 */
import ClusterPrepare from '../commands/cluster/prepare.js';
import Doctor from '../commands/doctor.js';
import Help from '../commands/help.js';
import Manifests from '../commands/manifests.js';
import NodesInit from '../commands/nodes/init.js';
import NodesList from '../commands/nodes/list.js';
import Run from '../commands/run.js';
import SecretCreate from '../commands/secret/create.js';

export { execute } from '@oclif/core/execute';

export const COMMANDS = {
  'cluster:prepare': ClusterPrepare,
  doctor: Doctor,
  help: Help,
  manifests: Manifests,
  'nodes:init': NodesInit,
  'nodes:list': NodesList,
  run: Run,
  'secret:create': SecretCreate,
};
