import { type Selection, selectControllers } from '../../controllers/manager.js';
import { isLoopbackAddress } from '../../plain-http.js';
import { loadProvider } from '../../providers/registry.js';
import type { ProviderDefinition } from '../../providers/types.js';
import { UsageError } from '../errors.js';
import { parseSecretRef } from '../provider-config.js';
import type { RunDeps, RunInput } from './types.js';

/** What the flags decide before `ccm run` reads or writes anything. */
export interface RunFlags {
  selection: Selection;
  definition: ProviderDefinition;
}

/**
 * The first stage of `ccm run`: every flag checked before anything is read or written (a refused one
 * is one line and exit 2), then the provider's definition loaded (an unknown name is refused too).
 */
export async function checkRunFlags(input: RunInput, deps: Pick<RunDeps, 'definition'>): Promise<RunFlags> {
  if (input.plainHttp && !isLoopbackAddress(input.bindAddress)) {
    throw new UsageError(
      `--plain-http serves /metrics without authentication, so only on this machine: --bind-address ${input.bindAddress} is not a loopback address; use 127.0.0.1 or ::1 (the default), or leave out --plain-http to serve HTTPS that asks for a token`,
    );
  }
  const selection = (() => {
    try {
      return selectControllers(input.controllers);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  })();
  if (input.leaderElect) checkLeaseTimings(input.lease);
  if (input.controllerOptions.clusterCIDR !== undefined) {
    const { parseClusterCIDRs } = await import('../../controllers/routes.js');
    try {
      parseClusterCIDRs(input.controllerOptions.clusterCIDR);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  if (!input.provider && !deps.definition) {
    throw new UsageError(
      'no provider given; pass --provider (e.g. --provider cloudlycke) or set CCM_PROVIDER',
    );
  }
  if (input.credentialsSecret) parseSecretRef(input.credentialsSecret);
  const definition = deps.definition ?? (await loadProvider(input.provider as string));
  return { selection, definition };
}

function checkLeaseTimings(lease: RunInput['lease']): void {
  if (!(lease.durationMs > lease.renewDeadlineMs)) {
    throw new UsageError('--leader-elect-lease-duration must be longer than --leader-elect-renew-deadline');
  }
  if (!(lease.renewDeadlineMs > lease.retryPeriodMs * 1.2)) {
    throw new UsageError(
      '--leader-elect-renew-deadline must be longer than 1.2 × --leader-elect-retry-period',
    );
  }
  if (lease.durationMs < 1000) throw new UsageError('--leader-elect-lease-duration must be at least 1s');
}
