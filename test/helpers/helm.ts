/**
 * The real helm (helm.sh/helm/v3, built once by test/helm/build.sh and cached beside the test control
 * plane), run on the chart of this repository (charts/ccm) with its own config, cache and data folders,
 * so that nothing of the machine's helm set-up is read or written.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { parseAllDocuments, stringify } from 'yaml';
import { tempDir } from './tmp.js';

export const CHART = fileURLToPath(new URL('../../charts/ccm', import.meta.url));
const BUILD = fileURLToPath(new URL('../helm/build.sh', import.meta.url));

let cached: string | undefined;

/** The helm binary: built on first use when test/setup.sh has not (minutes, once). */
export function helmBin(): string {
  cached ??= execFileSync('bash', [BUILD], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
    .trim()
    .split('\n')
    .pop() as string;
  return cached;
}

export interface HelmResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs helm; never throws for a non-zero exit, so that the test can show what it said. */
export async function helm(args: readonly string[], kubeconfig?: string): Promise<HelmResult> {
  const home = tempDir('ccm-helm-home-');
  const result = await execa(helmBin(), args, {
    reject: false,
    stdin: 'ignore',
    timeout: 120_000,
    extendEnv: false,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_DATA_HOME: join(home, 'data'),
      ...(kubeconfig ? { KUBECONFIG: kubeconfig } : { KUBECONFIG: join(home, 'no-kubeconfig') }),
    },
  });
  return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

/** A values file with these values, in a folder removed when the test ends. */
export function valuesFile(values: Record<string, unknown>): string {
  const file = join(tempDir('ccm-helm-values-'), 'values.yaml');
  writeFileSync(file, stringify(values));
  return file;
}

export type Doc = Record<string, unknown> & { kind: string; metadata: { name: string; namespace?: string } };

/** The objects of a YAML stream (helm template's, ccm manifests'), empty documents dropped. */
export function objectsOf(yaml: string): Doc[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJS() as Doc | null)
    .filter((d): d is Doc => d !== null && typeof d === 'object');
}

/** `helm template` of the chart with these values, in `namespace`: its objects, or helm's error. */
export async function helmTemplate(
  values: Record<string, unknown>,
  namespace = 'kube-system',
): Promise<{ objects: Doc[]; result: HelmResult }> {
  const result = await helm(['template', 'ccm', CHART, '--namespace', namespace, '-f', valuesFile(values)]);
  return { objects: result.exitCode === 0 ? objectsOf(result.stdout) : [], result };
}
