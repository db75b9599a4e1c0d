import { accessSync, constants, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeConfigError } from './errors.js';

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

/** Loads the kubeconfig the way kubectl does, failing with one actionable line. */
export function loadKubeConfig({ kubeconfig, context, env }: KubeConfigOptions): KubeConfig {
  const kc = new KubeConfig();
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
    load(kc, kubeconfig);
  } else if (fromEnv.length > 0) {
    // kubectl merges every file in KUBECONFIG; ccm reads the first readable one.
    const first = fromEnv.find(readable);
    if (!first) {
      throw new KubeConfigError(
        `KUBECONFIG names ${fromEnv.join(', ')}, which cannot be read; fix KUBECONFIG or pass --kubeconfig`,
      );
    }
    load(kc, first);
  } else if (readable(defaultPath)) {
    load(kc, defaultPath);
  } else if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
    kc.loadFromCluster();
  } else {
    throw new KubeConfigError(
      'no kubeconfig found; pass --kubeconfig, set KUBECONFIG, or run inside a cluster',
    );
  }

  if (context) {
    if (!kc.getContextObject(context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw new KubeConfigError(
        `context "${context}" is not in the kubeconfig; use one of: ${known.join(', ') || '(none)'}`,
      );
    }
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentCluster()) {
    throw new KubeConfigError('the kubeconfig has no current context with a cluster; pass --context');
  }
  return kc;
}

function load(kc: KubeConfig, path: string): void {
  try {
    kc.loadFromFile(path);
  } catch (err) {
    const reason = ((err as Error).message ?? String(err)).split('\n')[0];
    throw new KubeConfigError(
      `kubeconfig ${path} is not a valid kubeconfig (${reason}); fix the file or pass another with --kubeconfig`,
    );
  }
}
