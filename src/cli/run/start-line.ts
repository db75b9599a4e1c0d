import type { Logger } from 'pino';
import type { Selection } from '../../controllers/manager.js';
import type { RunInput } from './types.js';

export interface StartLine {
  /** The same facts as fields of the JSON record, for a log pipeline. */
  fields: {
    version: string;
    provider: string;
    controllers: string[];
    leaderElection: string;
    identity: string;
  };
  message: string;
}

/** One line saying what runs, as kube-controller-manager's start does (version, controllers, election). */
export function startLine(
  input: Pick<RunInput, 'version' | 'leaderElect' | 'lease'>,
  { provider, controllers, identity }: { provider: string; controllers: string[]; identity: string },
): StartLine {
  const leaderElection = input.leaderElect ? `${input.lease.namespace}/${input.lease.name}` : 'off';
  return {
    fields: { version: input.version ?? 'unknown', provider, controllers, leaderElection, identity },
    message: `ccm${input.version ? ` ${input.version}` : ''} starting: provider ${provider}, controllers ${controllers.join(', ') || 'none'}, leader election ${leaderElection}, identity ${identity}`,
  };
}

/**
 * Said once the start was accepted (a start refused is its one line of error, nothing more): the start
 * line, a warning when no controller runs, and where the cloud credentials came from.
 */
export function announceStart(
  log: Logger,
  input: Pick<RunInput, 'version' | 'leaderElect' | 'lease' | 'controllers'>,
  {
    provider,
    selection,
    identity,
    credentials,
    serving,
  }: { provider: string; selection: Selection; identity: string; credentials: string; serving?: string },
): void {
  const line = startLine(input, { provider, controllers: selection.enabled, identity });
  log.info(line.fields, line.message);
  if (selection.enabled.length === 0)
    log.warn(
      `--controllers ${input.controllers} enables no controller: this process serves health and metrics only`,
    );
  // Where it serves comes after the line that says what runs (docs/run.md, "Logs"), although the port
  // was bound first: a port in use is bad input, refused before anything else.
  if (serving) log.info(`serving /healthz, /readyz and /metrics on ${serving}`);
  log.info(`cloud credentials from ${credentials}`);
}
