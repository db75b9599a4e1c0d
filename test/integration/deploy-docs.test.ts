/**
 * docs/deploy.md as written, on a machine whose own Node is 20 (/usr/bin first on PATH, `ccm` on PATH
 * as the quick start puts it there): every line of its command blocks is run with bash, copied as is,
 * with only `<your registry>` filled in, against the real kube-apiserver (the operator's kubeconfig),
 * the DigitalOcean simulator as the cloud and kubectl of the control plane's version. The README's
 * "Deploying ccm in three commands" must be the page's own block. The image's blocks (`npm run image`,
 * the `skopeo inspect` of its index) are run by image.test.ts.
 */
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { binDir, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { type Doc, helmBin, objectsOf } from '../helpers/helm.js';
import { conformsToDigitalOceanOpenApi } from '../helpers/openapi.js';
import { tempDir } from '../helpers/tmp.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const NODE20_DIR = '/usr/bin';
const REGISTRY = 'registry.example.com';

/** The lines of each ```sh block of a section (up to the next heading of its level or higher). */
function blocks(page: string, heading: string): string[][] {
  const text = `\n${readFileSync(join(root, page), 'utf8')}`;
  const level = /^#+/.exec(heading)?.[0] as string;
  const from = text.indexOf(`\n${heading}\n`);
  if (from < 0) throw new Error(`${page} has no "${heading}"`);
  const rest = text.slice(from + heading.length + 2);
  const end = rest.search(new RegExp(`\\n#{1,${level.length}} `));
  const section = end < 0 ? rest : rest.slice(0, end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) =>
    (m[1] as string).split('\n').filter((l) => l.trim() !== ''),
  );
}

let cp: ControlPlane;
let sim: DigitalOceanSimulator;
let core: CoreV1Api;
let kubeCache: string;

/** One line of the page in bash (a pipeline fails when any of its commands does), Node 20 first on PATH. */
function shell(line: string, env: Record<string, string> = {}, cwd = root) {
  const kubectlDir = binDir();
  return execa('bash', ['-c', `set -o pipefail\n${line.replaceAll('<your registry>', REGISTRY)}`], {
    cwd,
    reject: false,
    env: {
      PATH: `${join(root, 'bin')}:${kubectlDir}:${NODE20_DIR}:${process.env.PATH}`,
      HOME: process.env.HOME as string,
      KUBECONFIG: cp.kubeconfigPath,
      // kubectl's discovery cache, which it would otherwise leave in ~/.kube/cache.
      KUBECACHEDIR: kubeCache,
      DO_OVERRIDE_URL: sim.url,
      ...env,
    },
    extendEnv: false,
    stdin: 'ignore',
    timeout: 120_000,
  });
}

beforeAll(async () => {
  if (!existsSync(join(binDir(), 'kubectl'))) {
    throw new Error(`no kubectl in ${binDir()}: run bash test/setup.sh (npm test runs it)`);
  }
  kubeCache = tempDir('ccm-kubectl-cache-');
  [cp, sim] = await Promise.all([startControlPlane(), DigitalOceanSimulator.start()]);
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  kc.setCurrentContext('fixtures');
  core = kc.makeApiClient(CoreV1Api);
});
afterAll(async () => {
  await Promise.all([cp?.stop(), sim?.stop()]);
});

describe('docs/deploy.md under Node 20', () => {
  it("the README's three commands are the deploy page's", () => {
    const [readme] = blocks('README.md', '## Deploying ccm in three commands');
    const [page] = blocks('docs/deploy.md', '# Deploying ccm');
    expect(readme).toHaveLength(3);
    expect(readme).toEqual(page);
  });

  it('secret create, manifests | kubectl apply, then doctor finds the Secret, the RBAC and the cloud', async () => {
    const node20 = await execa(`${NODE20_DIR}/node`, ['--version']);
    expect(node20.stdout).toMatch(/^v20\./);
    const [secretLine, applyLine, doctorLine] = blocks('docs/deploy.md', '# Deploying ccm')[0] as string[];

    // Off a terminal the token comes from the provider's environment (docs/secrets.md).
    const secret = await shell(secretLine as string, { DO_ACCESS_TOKEN: sim.token });
    expect(secret.exitCode, `${secretLine}\n${secret.stderr}`).toBe(0);
    expect(`${secret.stdout}${secret.stderr}`).not.toContain(sim.token);
    const written = await core.readNamespacedSecret({ name: 'digitalocean', namespace: 'kube-system' });
    expect(Buffer.from(written.data?.['access-token'] ?? '', 'base64').toString()).toBe(sim.token);

    const applied = await shell(applyLine as string);
    expect(applied.exitCode, `${applyLine}\n${applied.stderr}`).toBe(0);
    expect(applied.stdout).toContain('daemonset.apps/ccm serverside-applied');
    expect(applied.stdout).toContain('clusterrole.rbac.authorization.k8s.io/system:ccm serverside-applied');

    // The token now comes from the Secret; there is no Node here, so the DaemonSet runs no Pod (exit 1).
    // Off a terminal doctor prints one logfmt line per check, the status a word: status=pass check=rbac result="…".
    const doctor = await shell(doctorLine as string);
    const row = (check: string) =>
      new RegExp(`^status=(\\S+) check=${check} result="([^"]*)"`, 'm').exec(doctor.stdout)?.slice(1) ?? [];
    expect(row('credentials-secret'), doctor.stdout).toEqual([
      'pass',
      'Secret kube-system/digitalocean has access-token',
    ]);
    expect(row('cloud-credentials')[1], doctor.stdout).toMatch(
      /^the cloud accepts the credentials: DigitalOcean/,
    );
    expect(row('rbac')[1], doctor.stdout).toMatch(
      /^ServiceAccount kube-system\/ccm may do all \d+ things ccm needs$/,
    );
    expect(row('rbac-secrets')[0], doctor.stdout).toBe('pass');
    expect(row('controller-pods'), doctor.stdout).toEqual([
      'fail',
      'DaemonSet kube-system/ccm runs on no Node: no Node fits its required node affinity on node-role.kubernetes.io/control-plane (and tolerates nothing more than it does)',
    ]);
    expect(doctor.exitCode).toBe(1);
  });

  it('the CronJob: the inventory ConfigMap, then manifests --cronjob | kubectl apply', async () => {
    const [cronjob] = blocks('docs/deploy.md', '## Running it as a CronJob');
    expect(cronjob).toHaveLength(2);
    const cwd = tempDir('ccm-deploy-');
    copyFileSync(join(root, 'templates/cloudlycke/inventory.example.yaml'), join(cwd, 'inventory.yaml'));
    for (const line of cronjob as string[]) {
      const run = await shell(line, {}, cwd);
      expect(run.exitCode, `${line}\n${run.stderr}`).toBe(0);
    }
    const config = await core.readNamespacedConfigMap({
      name: 'ccm-cloudlycke-config',
      namespace: 'kube-system',
    });
    expect(config.data?.config).toBe(readFileSync(join(cwd, 'inventory.yaml'), 'utf8'));
    const kubectl = await shell(
      'kubectl -n kube-system get cronjob ccm-nodes-init -o jsonpath={.spec.schedule}',
    );
    expect(kubectl.stdout).toBe('*/5 * * * *');
  });

  it('without a registry: the loaded image by its full name, never pulled', async () => {
    const [, manifests] = blocks('docs/deploy.md', '### Without a registry');
    expect(manifests).toHaveLength(1);
    const run = await shell((manifests as string[])[0] as string);
    expect(run.exitCode, run.stderr).toBe(0);
    const kubectl = await shell(
      'kubectl -n kube-system get daemonset ccm -o jsonpath={.spec.template.spec.containers[0].image},{.spec.template.spec.containers[0].imagePullPolicy}',
    );
    expect(kubectl.stdout).toBe('localhost/ccm:0.1.0,Never');
  });

  it("the Helm chart: kubectl apply's objects removed, then lint, install, upgrade, uninstall; template is ccm manifests", async () => {
    const [lifecycle, template, removal] = blocks('docs/deploy.md', '## Helm chart');
    expect([lifecycle?.length, template?.length, removal?.length]).toEqual([4, 1, 2]);
    // helm on PATH, with folders of its own rather than the machine's ~/.config/helm and ~/.cache/helm.
    const home = tempDir('ccm-helm-home-');
    const env = {
      PATH: `${dirname(helmBin())}:${join(root, 'bin')}:${binDir()}:${NODE20_DIR}:${process.env.PATH}`,
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_DATA_HOME: join(home, 'data'),
    };
    const run = async (line: string) => {
      const result = await shell(line, env);
      expect(result.exitCode, `${line}\n${result.stderr}`).toBe(0);
      return result;
    };
    const image = () =>
      shell('kubectl -n kube-system get daemonset ccm -o jsonpath={.spec.template.spec.containers[0].image}');
    // The tests above applied `ccm manifests`: helm would refuse to take those objects over.
    expect((await image()).stdout).toBe('localhost/ccm:0.1.0');
    for (const line of removal as string[]) await run(line);
    expect((await image()).exitCode).not.toBe(0);

    const [lint, install, upgrade, uninstall] = lifecycle as [string, string, string, string];
    expect((await run(lint)).stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    await run(install);
    expect((await image()).stdout).toBe(`${REGISTRY}/ccm:0.1.0`);
    await run(upgrade);
    expect((await image()).stdout).toBe(`${REGISTRY}/ccm:0.2.0`);
    const cronjob = await shell(
      'kubectl -n kube-system get cronjob ccm-nodes-init -o jsonpath={.spec.schedule}',
    );
    expect(cronjob.stdout).toBe('*/5 * * * *');
    await run(uninstall);
    expect((await image()).exitCode).not.toBe(0);

    // "prints, object by object, what `ccm manifests --provider digitalocean --image …` prints"
    const key = (o: Doc) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    const byKey = (yaml: string) => new Map(objectsOf(yaml).map((o) => [key(o), o]));
    const chart = byKey((await run((template as string[])[0] as string)).stdout);
    const manifests = byKey(
      (await run('ccm manifests --provider digitalocean --image <your registry>/ccm:0.1.0')).stdout,
    );
    expect([...chart.keys()].sort()).toEqual([...manifests.keys()].sort());
    for (const [name, object] of chart) expect(object, name).toEqual(manifests.get(name));
  });
});

conformsToDigitalOceanOpenApi();
