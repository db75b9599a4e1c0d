import { KubeConfig } from '@kubernetes/client-node';
import { KubeConfigError } from './errors.js';
import { findKubeconfig, type KubeConfigOptions } from './kubeconfig-path.js';

export type { KubeConfigOptions };

/** Loads the kubeconfig the way kubectl does, failing with one actionable line. */
export function loadKubeConfig(options: KubeConfigOptions): KubeConfig {
  const kc = new KubeConfig();
  const source = findKubeconfig(options);
  if ('path' in source) load(kc, source.path);
  else kc.loadFromCluster();

  const { context } = options;
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
