import { accessSync, constants, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfigError } from './errors.js';

/** Which kubeconfig to use, kubectl's way; kept free of client-node so `ccm run` need not load it. */
export interface KubeConfigOptions {
  /** --kubeconfig; falls back to KUBECONFIG, ~/.kube/config, then the in-cluster service account. */
  kubeconfig?: string;
  context?: string;
  /** Environment, passed in so callers (and tests) decide what is read. */
  env: Readonly<Record<string, string | undefined>>;
}

function readable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

export type KubeconfigSource = { path: string } | { inCluster: true };

/** Which kubeconfig to read, the way kubectl picks it; one actionable line when there is none. */
export function findKubeconfig({ kubeconfig, env }: KubeConfigOptions): KubeconfigSource {
  const fromEnv = env.KUBECONFIG?.split(delimiter).filter(Boolean) ?? [];
  const home = env.HOME ?? homedir();
  const defaultPath = join(home, '.kube', 'config');

  if (kubeconfig) {
    if (!existsSync(kubeconfig))
      throw new KubeConfigError(
        `kubeconfig ${kubeconfig} does not exist; pass an existing file to --kubeconfig`,
      );
    if (!readable(kubeconfig))
      throw new KubeConfigError(`kubeconfig ${kubeconfig} is not readable; check its permissions`);
    return { path: kubeconfig };
  }
  if (fromEnv.length > 0) {
    // kubectl merges every file in KUBECONFIG; ccm reads the first readable one.
    const first = fromEnv.find(readable);
    if (!first) {
      throw new KubeConfigError(
        `KUBECONFIG names ${fromEnv.join(', ')}, which cannot be read; fix KUBECONFIG or pass --kubeconfig`,
      );
    }
    return { path: first };
  }
  if (readable(defaultPath)) return { path: defaultPath };
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) return { inCluster: true };
  throw new KubeConfigError(
    'no kubeconfig found; pass --kubeconfig, set KUBECONFIG, or run inside a cluster',
  );
}
