/**
 * doctor's CMON rows as pure functions (review 46): the certificate's account against ccm's, and which
 * of the cluster's Nodes' machines CMON lists in the cluster's group.
 */
import { describe, expect, it } from 'vitest';
import {
  checkCmonCertificate,
  checkCmonNodeNames,
  checkCmonNoSecret,
  checkCmonSecretsUnlisted,
  checkCmonTargets,
} from '../../../src/cli/doctor-checks.js';

const ref = { namespace: 'monitoring', name: 'triton-cmon' };
const now = new Date('2026-06-01T00:00:00Z');
const valid = { validFrom: new Date('2026-01-01T00:00:00Z'), validUntil: new Date('2030-01-01T00:00:00Z') };

describe('checkCmonCertificate: the account', () => {
  it("fails another account's certificate in one line, with the command that makes the right one", () => {
    const row = checkCmonCertificate(ref, { account: 'other', ...valid }, now, 'demo');
    expect(row?.status).toBe('fail');
    expect(row?.message).toBe(
      "the CMON certificate in Secret monitoring/triton-cmon is account other's, and ccm's Triton account is demo: CMON lists other account's machines to it, none of this cluster's",
    );
    expect(row?.fix).toBe(
      'make one with the credentials of account demo: ccm secret create --provider triton --cmon --namespace monitoring --name triton-cmon',
    );
  });

  it('passes the same account, and cannot compare without a configured one', () => {
    expect(checkCmonCertificate(ref, { account: 'demo', ...valid }, now, 'demo')?.status).toBe('pass');
    expect(checkCmonCertificate(ref, { account: 'other', ...valid }, now)?.status).toBe('pass');
  });
});

describe('checkCmonTargets', () => {
  const nodes = [
    { name: 'w1', machine: 'a' },
    { name: 'w2', machine: 'b' },
    { name: 'w3', machine: 'c' },
  ];
  const groups = { names: ['prod'], spec: '--cmon-groups cluster', from: '--cmon-groups' };

  it('passes when every Node is listed in the group', () => {
    const row = checkCmonTargets({
      account: 'demo',
      secret: ref,
      nodes,
      groups,
      listed: new Set(['a', 'b', 'c', 'x']),
    });
    expect(row.status).toBe('pass');
    expect(row.message).toContain("all 3 Node(s)' machines in group prod");
  });

  it('fails when none is listed, telling an untagged machine from one CMON does not list', () => {
    const row = checkCmonTargets({
      account: 'demo',
      secret: ref,
      nodes,
      groups,
      listed: new Set(['x']),
      listedWithoutGroups: new Set(['a', 'b', 'x']),
    });
    expect(row.status).toBe('fail');
    expect(row.message).toContain('w1, w2: listed without the group');
    expect(row.message).toContain('w3: not listed at all');
    expect(row.items).toEqual(['w1', 'w2', 'w3']);
  });

  it('warns naming the missing Nodes when some are listed', () => {
    const row = checkCmonTargets({ account: 'demo', secret: ref, nodes, groups, listed: new Set(['a']) });
    expect(row.status).toBe('warn');
    expect(row.message).toContain("CMON lists 1 of 3 Node(s)' machines");
    expect(row.items).toEqual(['w2', 'w3']);
  });

  it('without a group ccm keeps: warns when CMON lists the machines, fails when it lists none', () => {
    const seen = checkCmonTargets({ account: 'demo', secret: ref, nodes, listed: new Set(['a', 'b', 'c']) });
    expect(seen.status).toBe('warn');
    expect(seen.message).toContain('ccm keeps no CMON group');
    const none = checkCmonTargets({ account: 'demo', secret: ref, nodes, listed: new Set(['x']) });
    expect(none.status).toBe('fail');
  });

  it('no Node with a Triton provider ID: nothing to look for', () => {
    expect(
      checkCmonTargets({ account: 'demo', secret: ref, nodes: [], groups, listed: new Set() }).status,
    ).toBe('pass');
  });
});

describe('no certificate Secret found', () => {
  it('says how to make one; a warning only when ccm keeps CMON groups on the machines', () => {
    const off = checkCmonNoSecret('triton-cmon', undefined);
    expect(off.status).toBe('pass');
    expect(off.message).toContain(
      "no CMON certificate: no kubernetes.io/tls Secret triton-cmon in any namespace (--cmon-secret names one of another name): CMON metrics are not set up; to set them up, make it in Prometheus' namespace",
    );
    const on = checkCmonNoSecret('triton-cmon', {
      names: ['prod'],
      spec: '--cmon-groups cluster',
      from: 'env TRITON_CMON_GROUPS',
    });
    expect(on.status).toBe('warn');
    expect(on.fix).toBe(
      "make it in Prometheus' namespace, where its Pod can mount it: ccm secret create --provider triton --cmon --namespace <Prometheus' namespace>",
    );
  });

  it('a listing RBAC forbids is a warning, not silence', () => {
    const row = checkCmonSecretsUnlisted('forbidden', { namespace: 'kube-system', name: 'triton-cmon' });
    expect(row.status).toBe('warn');
    expect(row.message).toContain('only Secret kube-system/triton-cmon was looked at');
  });
});

describe('checkCmonNodeNames', () => {
  it('passes when no Node has a problem, warns naming each that has', () => {
    expect(checkCmonNodeNames([], 2).status).toBe('pass');
    const problems = ['a', 'b', 'c', 'd'].map((node) => ({ node, note: `${node}'s note` }));
    const row = checkCmonNodeNames(problems, 5);
    expect(row.status).toBe('warn');
    expect(row.message).toBe(
      `4 of 5 Node(s) will not be node="<their name>" in Prometheus' CMON series. a: a's note; b: b's note; c: c's note; and 1 more`,
    );
    expect(row.items).toEqual(['a', 'b', 'c', 'd']);
  });
});
