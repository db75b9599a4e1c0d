/**
 * The invariants of the chaos run, each a function of what the harness recorded (when each instance
 * existed, the replicas, the cloud proxy's log) and of what the API server audited. Every violation
 * is a line with its time; `checks` counts what was looked at, by invariant.
 *
 * Who held the Lease when: the audit log keeps the body of every Lease write (Request level), so the
 * holder timeline is the sequence of successful writes of the Lease, each naming its holder, ordered
 * by when the API server received them. A write by replica R at time t (the API server's receipt for
 * Kubernetes, the proxy's for the cloud; one machine, one clock) is a leader's write only when the last
 * successful Lease write before t named R. No tolerance: ccm's write gate closes `renew-deadline`
 * (4 s) after its last renewal, and a standby takes over only `lease-duration` (6 s) after it saw
 * the Lease change, so a leader's last write lands before anyone else can hold the Lease.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AuditEvent } from '../controlplane/harness.js';
import { CCM_USER } from '../controlplane/harness.js';
import type { ServiceView } from './clouds.js';
import { LEASE, type Replica } from './replicas.js';
import type { World } from './world.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export const INVARIANTS = [
  'no-node-deleted-while-its-instance-exists',
  'every-node-initialised',
  'one-load-balancer-per-service',
  'no-orphan-or-twice-created-load-balancer',
  'only-the-leader-writes',
  'memory-flat',
  'replicas-alive',
] as const;
export type Invariant = (typeof INVARIANTS)[number];

export interface Violation {
  at: number;
  invariant: Invariant;
  what: string;
}

interface LeaseWrite {
  at: number;
  holder: string;
}

const ok2xx = (e: AuditEvent) => (e.responseStatus?.code ?? 0) >= 200 && (e.responseStatus?.code ?? 0) < 300;
const received = (e: AuditEvent) => Date.parse(e.requestReceivedTimestamp ?? '') || 0;
const isOurLease = (e: AuditEvent) => e.objectRef?.resource === 'leases' && e.objectRef.name === LEASE;

export class Invariants {
  readonly violations: Violation[] = [];
  readonly checks: Record<Invariant, number> = Object.fromEntries(INVARIANTS.map((i) => [i, 0])) as Record<
    Invariant,
    number
  >;
  /** How long after the quiet period the settled state held (or the bound, when it did not). */
  settledAfterMs = 0;
  /** Successful Lease writes, in order of receipt. */
  readonly leaseWrites: LeaseWrite[] = [];
  /** ccm's Kubernetes writes not judged yet (the Lease's own excluded). */
  private pendingKube: AuditEvent[] = [];
  private auditOffset = 0;
  private cloudJudged = 0;
  private heldCloud: World['proxy']['log'] = [];
  private readonly creations = new Map<string, number>();
  /** Node deletions by ccm, for the report. */
  nodeDeletions = 0;

  constructor(private readonly world: World) {}

  private fail(invariant: Invariant, what: string, at = Date.now()) {
    this.violations.push({ at, invariant, what });
  }

  /** New lines of the audit log since the last call. */
  private readAudit(): AuditEvent[] {
    const buf = readFileSync(join(this.world.cp.dir, 'audit.log'));
    const end = buf.lastIndexOf(10) + 1;
    if (end <= this.auditOffset) return [];
    const text = buf.subarray(this.auditOffset, end).toString('utf8');
    this.auditOffset = end;
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditEvent);
  }

  holderAt(t: number): string | undefined {
    let holder: string | undefined;
    for (const w of this.leaseWrites) {
      if (w.at > t) break;
      holder = w.holder;
    }
    return holder;
  }

  private replicaOfIdentity(identity: string | undefined): Replica | undefined {
    return this.world.replicas.find((r) => r.identity && r.identity === identity);
  }

  /**
   * Everything that can be judged as it happens: Node deletions against the instances' lives, the
   * leader's writes (those older than `settleMs`, so that the Lease writes around them are in the
   * log), load balancer creations, the replicas' lives.
   */
  checkContinuously(settleMs = 3000): void {
    for (const e of this.readAudit()) {
      if (e.user.username !== CCM_USER || !WRITE_VERBS.has(e.verb)) continue;
      if (isOurLease(e)) {
        const holder = (e.requestObject as { spec?: { holderIdentity?: string } } | undefined)?.spec
          ?.holderIdentity;
        if (ok2xx(e)) this.leaseWrites.push({ at: received(e), holder: holder ?? '' });
        continue;
      }
      if (e.objectRef?.resource === 'nodes' && !e.objectRef.subresource && e.verb === 'delete' && ok2xx(e))
        this.judgeNodeDeletion(e);
      this.pendingKube.push(e);
    }
    this.leaseWrites.sort((a, b) => a.at - b.at);
    const horizon = Date.now() - settleMs;
    const later: AuditEvent[] = [];
    for (const e of this.pendingKube) {
      if (received(e) > horizon) later.push(e);
      else this.judgeKubeWrite(e);
    }
    this.pendingKube = later;
    const log = this.world.proxy.log;
    let i = this.cloudJudged;
    // Review 45b: a request a partition holds is judged when it is delivered (a realistic partition
    // delivers what a client still waits for), or at the very end (settleMs 0) if never.
    const stillHeld: typeof log = [];
    for (const r of this.heldCloud) {
      if (r.deliveredAt !== undefined && r.status === undefined && settleMs > 0) stillHeld.push(r);
      else if (r.deliveredAt === undefined && settleMs > 0) stillHeld.push(r);
      else this.judgeCloudRequest(r);
    }
    this.heldCloud = stillHeld;
    for (; i < log.length; i++) {
      const r = log[i];
      if (!r || r.at > horizon) break;
      if (r.outcome === 'partitioned' && r.deliveredAt === undefined && settleMs > 0) this.heldCloud.push(r);
      else this.judgeCloudRequest(r);
    }
    this.cloudJudged = i;
    this.checkReplicasAlive();
  }

  private judgeNodeDeletion(e: AuditEvent) {
    this.checks['no-node-deleted-while-its-instance-exists']++;
    this.nodeDeletions++;
    const name = e.objectRef?.name ?? '';
    const t = received(e);
    const instance = this.world.instances.get(name);
    if (instance && instance.createdAt <= t && (instance.goneAt === undefined || t < instance.goneAt)) {
      this.fail(
        'no-node-deleted-while-its-instance-exists',
        `Node ${name} deleted at ${new Date(t).toISOString()} by ${e.userAgent}; its instance ${instance.id} ${instance.goneAt ? `went only at ${new Date(instance.goneAt).toISOString()}` : 'still exists'}`,
        t,
      );
    }
  }

  /** Review 45b: every write judged, with its verdict then, to judge again on the whole timeline. */
  private readonly judged: { at: () => number; who?: string; verdictOk: boolean; what: () => string }[] = [];

  /**
   * Review 45b: the writes judged during the run were judged against the Lease writes the audit log
   * showed 3 s later. A Lease write the API server audited later than that (its answer slow: the audit
   * event is written at ResponseComplete) or never (killed between the commit and the audit line)
   * was missing from the timeline then. Judged again here on the whole timeline.
   */
  rejudge(): void {
    for (const j of this.judged) {
      const holder = this.holderAt(j.at());
      const ok = Boolean(j.who) && j.who === holder;
      if (ok === j.verdictOk) continue;
      if (!ok)
        this.fail(
          'only-the-leader-writes',
          `${j.what()} while the Lease named ${holder || 'nobody'} (found only on the whole Lease timeline at the end; judged a leader's write during the run)`,
          j.at(),
        );
    }
  }

  private judgeKubeWrite(e: AuditEvent) {
    this.checks['only-the-leader-writes']++;
    {
      const who = /ccm \(([^)]+)\)/.exec(e.userAgent ?? '')?.[1];
      const t0 = received(e);
      const h = this.holderAt(t0);
      this.judged.push({
        at: () => t0,
        ...(who ? { who } : {}),
        verdictOk: Boolean(who) && who === h,
        what: () =>
          `${e.verb} ${e.objectRef?.resource} ${e.objectRef?.namespace ?? ''}/${e.objectRef?.name ?? ''} by ${who} at ${new Date(t0).toISOString()}`,
      });
    }
    const identity = /ccm \(([^)]+)\)/.exec(e.userAgent ?? '')?.[1];
    const t = received(e);
    const holder = this.holderAt(t);
    if (!identity || identity !== holder) {
      const replica = this.replicaOfIdentity(identity);
      this.fail(
        'only-the-leader-writes',
        `${e.verb} ${e.objectRef?.resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''} ${e.objectRef?.namespace ?? ''}/${e.objectRef?.name ?? ''} (${e.responseStatus?.code}) by ${replica?.name ?? '?'} (${identity ?? e.userAgent}) at ${new Date(t).toISOString()}, while the Lease named ${holder || 'nobody'}`,
        t,
      );
    }
  }

  private judgeCloudRequest(r: World['proxy']['log'][number]) {
    const cloud = this.world.cloud;
    if (cloud.isCreate(r.method, r.path) && r.status !== undefined && r.status >= 200 && r.status < 300) {
      this.checks['no-orphan-or-twice-created-load-balancer']++;
      const services = [...this.world.services.values()];
      const service = r.body ? cloud.createdFor(r.body, services) : undefined;
      if (!service)
        this.fail(
          'no-orphan-or-twice-created-load-balancer',
          `a load balancer created for no Service: ${r.body}`,
          r.at,
        );
      else {
        const n = (this.creations.get(service) ?? 0) + 1;
        this.creations.set(service, n);
        if (n > 1)
          this.fail(
            'no-orphan-or-twice-created-load-balancer',
            `a load balancer created for ${service} a ${n}${n === 2 ? 'nd' : 'th'} time, by ${r.replica} at ${new Date(r.at).toISOString()}`,
            r.at,
          );
      }
    }
    if (r.method === 'GET' || r.method === 'HEAD' || cloud.isReadOnly(r.method, r.path)) return;
    this.checks['only-the-leader-writes']++;
    const replica = this.world.replicas.find((x) => x.name === r.replica);
    // Review 45b: the cloud's receipt; a request a partition held reaches it only when delivered.
    const at = r.deliveredAt ?? r.at;
    const holder = this.holderAt(at);
    this.judged.push({
      // A partitioned request judged before it was delivered is judged again at its delivery.
      at: () => r.deliveredAt ?? r.at,
      ...(replica?.identity ? { who: replica.identity } : {}),
      verdictOk: Boolean(replica?.identity) && replica?.identity === holder,
      what: () =>
        `cloud ${r.method} ${r.path} (${r.outcome}) by ${r.replica} at ${new Date(r.deliveredAt ?? r.at).toISOString()}${r.deliveredAt ? ' (delivered when a partition healed)' : ''}`,
    });
    if (!replica?.identity || replica.identity !== holder)
      this.fail(
        'only-the-leader-writes',
        `cloud ${r.method} ${r.path} (${r.outcome}${r.status ? ` ${r.status}` : ''}) by ${r.replica} (${replica?.identity}) at ${new Date(at).toISOString()}${r.deliveredAt ? ` (sent ${new Date(r.at).toISOString()}, delivered when the partition healed)` : ''}, while the Lease named ${holder || 'nobody'}`,
        at,
      );
  }

  private checkReplicasAlive() {
    for (const r of this.world.replicas) {
      this.checks['replicas-alive']++;
      if (r.exit && !r.killed && !this.violations.some((v) => v.what.startsWith(`${r.name} `)))
        this.fail(
          'replicas-alive',
          `${r.name} exited (code ${r.exit.code}, signal ${r.exit.signal}) without being killed; its log: ${r.logPath}`,
          r.exit.at,
        );
    }
  }

  /**
   * After the quiet period: the state the cluster and the cloud must have settled in, looked at every
   * 5 s until it holds or `boundMs` has passed; what still fails then is a violation. The bound is the
   * longest a failed key may rightly wait: the service controller's backoff doubles to 300 s, as
   * upstream's. `settledAfterMs` says how long it took.
   */
  async checkSettled(boundMs: number): Promise<void> {
    const started = Date.now();
    for (;;) {
      const { checks, problems } = await this.settledProblems();
      if (problems.length === 0 || Date.now() - started >= boundMs) {
        for (const [invariant, n] of Object.entries(checks)) this.checks[invariant as Invariant] += n;
        for (const p of problems) this.fail(p.invariant, p.what);
        this.settledAfterMs = Date.now() - started;
        return;
      }
      await new Promise((r) => setTimeout(r, 5000));
    }
  }

  private async settledProblems() {
    const checks: Partial<Record<Invariant, number>> = {};
    const problems: { invariant: Invariant; what: string }[] = [];
    const count = (invariant: Invariant) => {
      checks[invariant] = (checks[invariant] ?? 0) + 1;
    };
    const fail = (invariant: Invariant, what: string) => problems.push({ invariant, what });
    const { api, cloud } = this.world;
    const nodes = (await api.listNode()).items;
    for (const node of nodes) {
      const name = node.metadata?.name ?? '';
      const instance = this.world.instances.get(name);
      // A machine that went before ccm could initialise its Node leaves a Node without a provider
      // ID, which ccm never deletes (a Node of no known instance is never "gone"): not ccm's to fix.
      if (instance?.goneAt && !node.spec?.providerID) continue;
      count('every-node-initialised');
      const tainted = (node.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED);
      if (tainted || !node.spec?.providerID)
        fail(
          'every-node-initialised',
          `Node ${name} is not initialised after the quiet period (${tainted ? 'still tainted' : 'no taint'}, providerID ${node.spec?.providerID ?? 'none'}; instance ${instance?.goneAt ? 'gone' : instance?.running ? 'running' : 'stopped'})`,
        );
    }

    const live = (await api.listNamespacedService({ namespace: 'default' })).items.filter(
      (s) => s.spec?.type === 'LoadBalancer',
    );
    const views: ServiceView[] = live.map((s) => ({
      name: s.metadata?.name ?? '',
      uid: s.metadata?.uid ?? '',
      annotations: s.metadata?.annotations ?? {},
      givenNames: this.world.services.get(s.metadata?.name ?? '')?.givenNames ?? new Set(),
    }));
    const lbs = cloud.loadBalancers(views);
    for (const s of live) {
      const name = s.metadata?.name ?? '';
      count('one-load-balancer-per-service');
      if (s.metadata?.deletionTimestamp) {
        fail(
          'one-load-balancer-per-service',
          `Service ${name} is still being deleted after the quiet period`,
        );
        continue;
      }
      const own = lbs.filter((lb) => lb.service === name);
      const ingress = (s.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? i.hostname ?? '');
      if (own.length !== 1)
        fail(
          'one-load-balancer-per-service',
          `Service ${name} has ${own.length} load balancers (${own.map((lb) => lb.id).join(', ')})`,
        );
      else if (!own[0]?.ips.some((ip) => ingress.includes(ip)))
        fail(
          'one-load-balancer-per-service',
          `Service ${name}'s ingress ${JSON.stringify(ingress)} does not show its load balancer's address (${own[0]?.ips.join(', ')})`,
        );
    }
    for (const lb of lbs) {
      count('no-orphan-or-twice-created-load-balancer');
      if (!lb.service || !live.some((s) => s.metadata?.name === lb.service))
        fail(
          'no-orphan-or-twice-created-load-balancer',
          `load balancer ${lb.id} (${lb.ips.join(', ')}) is left without its Service${lb.service ? ` ${lb.service}` : ''}`,
        );
    }
    return { checks, problems };
  }

  /** Everything left to judge, at the very end (nothing is written any more). */
  finish(): void {
    this.checkContinuously(0);
    this.rejudge();
  }
}
