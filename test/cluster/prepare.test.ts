/**
 * `ccm cluster prepare` on a running kubeadm cluster started without an external cloud provider: the
 * dry run, a kubelet restart that fails, the re-run, and the rollback, read back from the files, the
 * running processes' command lines and the Node.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ccm } from '../helpers/cli.js';
import {
  freshCluster,
  hostPath,
  KUBECONFIG,
  kubectl,
  kubectlJson,
  leaveCluster,
  NODE_NAME,
  nodeReady,
  REPO_PAUSE_IMAGE,
  runningArgs,
  STATE,
  until,
} from './harness.js';

const FILES = ['/var/lib/kubelet/kubeadm-flags.env', ...manifestPaths()];
const TAINT = 'node.cloudprovider.kubernetes.io/uninitialized';

function manifestPaths(): string[] {
  const dir = '/etc/kubernetes/manifests';
  return existsSync(dir) ? readdirSync(dir).map((name) => `${dir}/${name}`) : [];
}

function snapshot(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const path of [...new Set([...FILES, ...manifestPaths()])]) {
    files[path] = createHash('sha256').update(readFileSync(path)).digest('hex');
  }
  return files;
}

async function kubeadmConfig(): Promise<string> {
  const cm = await kubectlJson<{ data: Record<string, string> }>([
    '-n',
    'kube-system',
    'get',
    'configmap',
    'kubeadm-config',
  ]);
  return cm.data.ClusterConfiguration ?? '';
}

function prepare(...args: string[]) {
  return ccm(['cluster', 'prepare', ...args], { KUBECONFIG, PATH: hostPath() }, 300_000);
}

async function taints(): Promise<string[]> {
  const node = await kubectlJson<{ spec: { taints?: Array<{ key: string }> } }>(['get', 'node', NODE_NAME]);
  return (node.spec.taints ?? []).map((t) => t.key);
}

function live(name: string): string {
  const found = runningArgs(name);
  if (found.length !== 1) throw new Error(`${found.length} ${name} processes`);
  return (found[0] as string[]).join(' ');
}

async function healthy(): Promise<void> {
  await until(
    'the API server /readyz',
    async () => (await kubectl(['get', '--raw', '/readyz'], { reject: false })).exitCode === 0,
  );
  await until('the Node Ready', async () => (await nodeReady()) === 'True');
}

async function plainPod(name: string): Promise<void> {
  await kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { containers: [{ name: 'pause', image: REPO_PAUSE_IMAGE, imagePullPolicy: 'Never' }] },
    }),
  });
}

async function podPhase(name: string): Promise<string> {
  return (await kubectl(['get', 'pod', name, '-o', 'jsonpath={.status.phase}'])).stdout;
}

describe('ccm cluster prepare on a running kubeadm cluster', () => {
  let before: Record<string, string>;
  let configBefore: string;

  beforeAll(async () => {
    await freshCluster();
    before = snapshot();
    configBefore = await kubeadmConfig();
  });

  afterAll(async () => {
    await leaveCluster();
  });

  it('--dry-run shows the kubelet and controller-manager edits and writes nothing', async () => {
    const run = await prepare('--dry-run');
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('--cloud-provider=external');
    expect(snapshot()).toEqual(before);
    expect(await kubeadmConfig()).toBe(configBefore);
    expect(live('kubelet')).not.toContain('--cloud-provider=external');
  });

  it('names a failed kubelet restart as such, and a second run restarts the kubelet it left behind', async () => {
    writeFileSync(`${STATE}/fail-next-start`, '');
    const failed = await prepare('--yes');
    expect(failed.exitCode).not.toBe(0);
    const said = failed.stdout + failed.stderr;
    expect(said).not.toContain('backup could not be written');
    expect(said).toMatch(/restart/i);
    expect(said).toMatch(/kubelet/);
    // The files were written; the kubelet is down, or still runs the old flags.
    expect(readFileSync('/var/lib/kubelet/kubeadm-flags.env', 'utf8')).toContain('--cloud-provider=external');

    const again = await prepare('--yes', '--initialize-existing');
    expect(again.stderr).toBe('');
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toContain(
      '1 existing Node tainted node.cloudprovider.kubernetes.io/uninitialized: run `ccm nodes init` to initialise it.',
    );
    await until('the kubelet running with --cloud-provider=external', async () =>
      live('kubelet').includes('--cloud-provider=external'),
    );
    await until('kube-controller-manager running with --cloud-provider=external', async () =>
      live('kube-controller-manager').includes('--cloud-provider=external'),
    );
    await healthy();
    expect(await taints()).toContain(TAINT);
    // Nothing external runs yet: a plain Pod waits for the cloud controller.
    await plainPod('waits-for-ccm');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await podPhase('waits-for-ccm')).toBe('Pending');
  });

  it('--rollback restores every file byte for byte and takes back the taint it added', async () => {
    const run = await prepare('--rollback', '--yes');
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).not.toContain('nothing to roll back');
    expect(snapshot()).toEqual(before);
    expect(await kubeadmConfig()).toBe(configBefore);
    await until(
      'the kubelet running without --cloud-provider=external',
      async () => !live('kubelet').includes('--cloud-provider=external'),
    );
    await until(
      'kube-controller-manager running without --cloud-provider',
      async () => !live('kube-controller-manager').includes('--cloud-provider'),
    );
    await healthy();
    expect(await taints()).not.toContain(TAINT);
    await until('the plain Pod running', async () => (await podPhase('waits-for-ccm')) === 'Running');
  });

  it('a rollback whose kubelet restart fails is finished by running it again', async () => {
    const prepared = await prepare('--yes');
    expect(prepared.exitCode, prepared.stdout + prepared.stderr).toBe(0);
    await until('the kubelet running with --cloud-provider=external', async () =>
      live('kubelet').includes('--cloud-provider=external'),
    );

    writeFileSync(`${STATE}/fail-next-start`, '');
    const failed = await prepare('--rollback', '--yes');
    expect(failed.exitCode).not.toBe(0);
    expect(runningArgs('kubelet')).toEqual([]);

    const planned = await prepare('--rollback', '--dry-run');
    expect(planned.stdout).toContain('restart kubelet: it is not running');
    const again = await prepare('--rollback', '--yes');
    expect(again.stderr).toBe('');
    expect(again.exitCode).toBe(0);
    await until(
      'the kubelet running without --cloud-provider=external',
      async () => !live('kubelet').includes('--cloud-provider=external'),
    );
    expect(snapshot()).toEqual(before);
    expect(await kubeadmConfig()).toBe(configBefore);
    await healthy();
  });
});
