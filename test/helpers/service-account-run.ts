/**
 * The built `ccm run` as the DaemonSet of `ccm manifests` runs it: as the manifests' ServiceAccount
 * (a TokenRequest token), scraped by a Prometheus allowed `get /metrics` alone, its requests read
 * back from the API server's audit log. For the tests that prove the manifests' RBAC is enough, and
 * that every rule of it is needed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoordinationV1Api, type CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { Agent, fetch } from 'undici';
import { expect } from 'vitest';
import { stringify } from 'yaml';
import { controllerWorkload, type PolicyRule } from '../../src/cli/manifests.js';
import { fixtureApi, fixtureApply, fixtureClient } from '../controlplane/fixtures.js';
import type { AuditEvent, ControlPlane } from '../controlplane/harness.js';
import { terminate, until } from './run.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

export type ManifestDoc = KubernetesObject & Record<string, unknown>;
type Apply = <T extends KubernetesObject>(obj: T) => Promise<unknown>;

const forbidden = (events: AuditEvent[]) => events.filter((e) => e.responseStatus?.code === 403);

/** `resource` or `resource/subresource`, as an RBAC rule names it. */
const resourceOf = (e: AuditEvent) =>
  `${e.objectRef?.resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;

/** A TokenRequest token of the ServiceAccount, for an hour. */
export async function serviceAccountToken(core: CoreV1Api, name: string, namespace: string): Promise<string> {
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  return request.status?.token ?? '';
}

/** A token allowed `get /metrics` and nothing else, as a Prometheus has. */
async function metricsScraperToken(core: CoreV1Api, apply: Apply): Promise<string> {
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'ccm-test-metrics-reader' },
    rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
  } as KubernetesObject);
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'ccm-test-metrics-reader' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ccm-test-metrics-reader' },
    subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: 'default' }],
  } as KubernetesObject);
  await apply({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'prometheus', namespace: 'default' },
  });
  return serviceAccountToken(core, 'prometheus', 'default');
}

/** Writes at `path` a kubeconfig whose only user is a TokenRequest token of ServiceAccount `namespace`/ccm. */
async function serviceAccountKubeconfig(
  cp: ControlPlane,
  core: CoreV1Api,
  namespace: string,
  path: string,
): Promise<string> {
  const token = await serviceAccountToken(core, 'ccm', namespace);
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server: cp.server, 'certificate-authority-data': cp.caData } }],
      users: [{ name: 'ccm', user: { token } }],
      contexts: [{ name: 'ccm', context: { cluster: 'test', user: 'ccm' } }],
      'current-context': 'ccm',
    }),
    { mode: 0o600 },
  );
  return path;
}

/** The arguments of the manifests' `ccm run` (DaemonSet, or Deployment) but its --secure-port. */
function deploymentArgs(docs: ManifestDoc[]): string[] {
  const workload = controllerWorkload(docs) as unknown as {
    spec: { template: { spec: { containers: { args: string[] }[] } } };
  };
  return (workload.spec.template.spec.containers[0]?.args ?? []).filter(
    (a) => !a.startsWith('--secure-port'),
  );
}

/**
 * One `ccm run` process at a time, as the manifests' ServiceAccount `namespace`/ccm, with the
 * fixtures admin's clients to arrange the cluster around it.
 */
export class ServiceAccountRun {
  readonly core: CoreV1Api;
  readonly leases: CoordinationV1Api;
  readonly apply: Apply;
  /** What the running ccm printed, for the failure message. */
  log = '';
  /** The arguments `start` runs ccm with (set by `install`). */
  args: string[] = [];
  private child: ChildProcess | undefined;
  private scraperToken = '';
  private readonly user: string;

  constructor(
    private readonly cp: ControlPlane,
    private readonly namespace: string,
  ) {
    this.core = fixtureApi(cp.kubeconfigPath);
    this.leases = fixtureClient(cp.kubeconfigPath, CoordinationV1Api);
    this.apply = fixtureApply(cp.kubeconfigPath);
    this.user = `system:serviceaccount:${namespace}:ccm`;
  }

  /**
   * Applies the manifests, then makes the ServiceAccount's kubeconfig (in `dir`) and a scraper's
   * token; `start` then runs the Deployment's own arguments, pointed at this machine, and `extra`.
   */
  async install(docs: ManifestDoc[], dir: string, extra: string[]): Promise<void> {
    for (const doc of docs) await this.apply(doc);
    const kubeconfig = await serviceAccountKubeconfig(
      this.cp,
      this.core,
      this.namespace,
      join(dir, 'sa-kubeconfig'),
    );
    this.scraperToken = await metricsScraperToken(this.core, this.apply);
    this.args = [
      ...deploymentArgs(docs),
      `--kubeconfig=${kubeconfig}`,
      '--secure-port=0',
      '--bind-address=127.0.0.1',
      ...extra,
    ];
  }

  /**
   * Starts `ccm run`, scraped every 300 ms; returns a function that reads the requests the
   * ServiceAccount made since.
   */
  async start(): Promise<() => Promise<AuditEvent[]>> {
    const before = (await this.cp.requests(this.user)).length;
    const child = spawn(process.execPath, [bin, ...this.args], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.log = '';
    const append = (d: Buffer) => {
      this.log += d;
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    void this.scrape(child, this.scraperToken);
    return async () => (await this.cp.requests(this.user)).slice(before);
  }

  /** A Prometheus: reads /metrics with its own token every 300 ms while this ccm runs. */
  private async scrape(running: ChildProcess, token: string): Promise<void> {
    const insecure = new Agent({ connect: { rejectUnauthorized: false } });
    while (running.exitCode === null && running.signalCode === null) {
      const url = /serving \/healthz, \/readyz and \/metrics on (https:\/\/[^\s"]+)/.exec(this.log)?.[1];
      if (url) {
        await fetch(`${url}/metrics`, {
          dispatcher: insecure,
          headers: { authorization: `Bearer ${token}` },
        }).then(
          (res) => res.arrayBuffer(),
          () => undefined,
        );
      }
      await new Promise((r) => setTimeout(r, 300));
    }
    await insecure.close();
  }

  /** SIGTERM and wait, unless it has already exited on its own (a missing permission can end it). */
  async stop(): Promise<void> {
    const running = this.child;
    this.child = undefined;
    if (running) await terminate(running, 'ccm run');
  }

  /** After a failed test: what ccm printed last. */
  printIfFailed(ctx: { task: { result?: { state?: string } } }): void {
    if (ctx.task.result?.state === 'fail')
      console.error(`ccm run (${this.args.join(' ')}) printed:\n${this.log.slice(-4000)}`);
  }

  /** Expects no request answered 403, and each of `needed` (`verb resource[/subresource]`) made. */
  expectAllowed(requests: AuditEvent[], needed: string[]): void {
    expect(forbidden(requests)).toEqual([]);
    const used = new Set(requests.map((e) => `${e.verb} ${resourceOf(e)}`));
    for (const want of needed) expect(used, want).toContain(want);
  }

  /**
   * Removes each rule of the manifests' roles (those of `component` alone, when given) in turn,
   * applying the role without it; runs `scenario` and expects a 403 on one of that rule's resources,
   * for one of its verbs; applies the role whole again after. Returns how many rules were checked.
   */
  async expectEveryRuleNeeded(
    docs: ManifestDoc[],
    scenario: () => Promise<() => Promise<AuditEvent[]>>,
    component?: string,
  ): Promise<number> {
    const roles = docs.filter(
      (d) =>
        (d.kind === 'ClusterRole' || d.kind === 'Role') &&
        (component === undefined || d.metadata?.labels?.['app.kubernetes.io/component'] === component),
    );
    let checked = 0;
    for (const role of roles) {
      const rules = role.rules as PolicyRule[];
      for (const [i, rule] of rules.entries()) {
        await this.apply({ ...role, rules: rules.filter((_, j) => j !== i) });
        const seen = await scenario();
        const hit = await until(
          `a 403 without ${role.kind} ${role.metadata?.name} rule ${JSON.stringify(rule)}`,
          async () => forbidden(await seen()).find((e) => rule.resources.includes(resourceOf(e))),
          30_000,
        );
        expect(rule.verbs).toContain(hit.verb);
        checked++;
        await this.stop();
        await this.apply(role);
      }
    }
    return checked;
  }
}
