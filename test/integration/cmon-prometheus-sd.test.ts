/**
 * Prometheus' own Triton discovery (github.com/prometheus/prometheus discovery/triton, through
 * test/prometheus-sd) against the CMON simulator, with a certificate made as
 * `triton profile cmon-certgen` makes it: the targets it finds and their labels, and what it does
 * when CMON refuses it. Prometheus reads the body of any answer as the discovery JSON without looking
 * at the status (triton.go refresh), so a refused request is an empty target list, not an error.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CmonCert, cmonCertificate } from '../clouds/triton/cmon-cert.js';
import { buildTritonSd, runTritonSd, type TritonSdConfig } from '../helpers/prometheus-sd.js';
import { tempDir } from '../helpers/tmp.js';
import { useCmon } from '../helpers/use-cmon.js';

const world = useCmon();
let bin: string;

beforeAll(async () => {
  bin = await buildTritonSd();
}, 900_000);

/** Runs one discovery as the `demo` account with `cert` (none: no tls client files). */
async function discover(cert: CmonCert | undefined, extra: Partial<TritonSdConfig> = {}, scrape = false) {
  const dir = tempDir('ccm-triton-sd-');
  writeFileSync(join(dir, 'ca.pem'), world.cmon.ca);
  if (cert) {
    writeFileSync(join(dir, 'cmon-demo-cert.pem'), cert.cert);
    writeFileSync(join(dir, 'cmon-demo-key.pem'), cert.key);
  }
  // The triton_sd_configs entry cmon-certgen writes (node-triton profilecommon.js
  // generateExampleConfig): dns_suffix and endpoint both CMON's name, version 1; here also the port
  // and the simulator's CA.
  return runTritonSd(
    bin,
    dir,
    {
      account: 'demo',
      dns_suffix: world.cmon.host,
      endpoint: world.cmon.host,
      port: world.cmon.port,
      version: 1,
      tls_config: {
        ca_file: 'ca.pem',
        ...(cert ? { cert_file: 'cmon-demo-cert.pem', key_file: 'cmon-demo-key.pem' } : {}),
      },
      ...extra,
    },
    { scrape },
  );
}

function cluster() {
  const { demo, other } = world;
  demo.machines.clear();
  other.machines.clear();
  return {
    cp: demo.addMachine({ name: 'cp-1', tags: { 'triton.cmon.groups': 'k8s-a,control-plane' } }),
    worker: demo.addMachine({ name: 'worker-1', brand: 'kvm', tags: { 'triton.cmon.groups': 'k8s-a' } }),
    stopped: demo.addMachine({ name: 'worker-2', state: 'stopped', tags: { 'triton.cmon.groups': 'k8s-a' } }),
    elsewhere: demo.addMachine({ name: 'db-1', tags: { 'triton.cmon.groups': 'k8s-b' } }),
    untagged: demo.addMachine({ name: 'bastion' }),
    theirs: other.addMachine({ name: 'their-cp', tags: { 'triton.cmon.groups': 'k8s-a' } }),
  };
}

const lastStatus = () => world.cmon.requests.at(-1)?.status;

describe("Prometheus' triton_sd_configs against the CMON simulator", () => {
  it('finds exactly the running instances of the groups, with the labels Prometheus documents', async () => {
    const { cp, worker } = cluster();
    const found = await discover(cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey }), {
      groups: ['k8s-a'],
    });
    expect(found.error).toBeUndefined();
    expect(found.sources).toEqual([`https://${world.cmon.host}:${world.cmon.port}/v1/discover?groups=k8s-a`]);
    const byId = (a: Record<string, string>, b: Record<string, string>) =>
      String(a.__meta_triton_machine_id).localeCompare(String(b.__meta_triton_machine_id));
    expect(found.targets.sort(byId)).toEqual(
      [
        {
          __address__: `${cp.id}.${world.cmon.host}:${world.cmon.port}`,
          __meta_triton_groups: ',k8s-a,control-plane,',
          __meta_triton_machine_alias: 'cp-1',
          __meta_triton_machine_brand: 'bhyve',
          __meta_triton_machine_id: cp.id,
          __meta_triton_machine_image: cp.image,
          __meta_triton_server_id: cp.compute_node,
        },
        {
          __address__: `${worker.id}.${world.cmon.host}:${world.cmon.port}`,
          __meta_triton_groups: ',k8s-a,',
          __meta_triton_machine_alias: 'worker-1',
          __meta_triton_machine_brand: 'kvm',
          __meta_triton_machine_id: worker.id,
          __meta_triton_machine_image: worker.image,
          __meta_triton_server_id: worker.compute_node,
        },
      ].sort(byId),
    );
    expect(world.cmon.requests.at(-1)).toMatchObject({ path: '/v1/discover', status: 200, account: 'demo' });
  });

  it("finds every running instance of the account without groups, and none of another account's", async () => {
    const { theirs, stopped } = cluster();
    const found = await discover(cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey }));
    const aliases = found.targets.map((t) => t.__meta_triton_machine_alias).sort();
    expect(aliases).toEqual(['bastion', 'cp-1', 'db-1', 'worker-1']);
    const ids = found.targets.map((t) => t.__meta_triton_machine_id);
    expect(ids).not.toContain(theirs.id);
    expect(ids).not.toContain(stopped.id);
    // An instance without groups has no __meta_triton_groups at all (triton.go: only when len > 0).
    expect(found.targets.find((t) => t.__meta_triton_machine_alias === 'bastion')).not.toHaveProperty(
      '__meta_triton_groups',
    );
  });

  it("scrapes each target found at its address, Host-routed, in text Prometheus' parser reads", async () => {
    const { cp, worker } = cluster();
    world.demo.machine(worker.id).ips = ['10.0.0.5', '192.168.0.5'];
    const cert = cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey });
    const found = await discover(cert, { groups: ['k8s-a'] }, true);
    expect(found.scrapes.map((s) => s.address).sort()).toEqual(
      [cp.id, worker.id].map((id) => `${id}.${world.cmon.host}:${world.cmon.port}`).sort(),
    );
    for (const s of found.scrapes) {
      expect(s).toMatchObject({ status: 200, content_type: 'text/plain' });
      expect(s.error).toBeUndefined();
      expect(s.series?.mem_limit).toBe(4096 * 1024 * 1024);
    }
    const workerScrape = found.scrapes.find((s) => s.address.startsWith(worker.id));
    expect(Object.keys(workerScrape?.series ?? {}).filter((k) => k.startsWith('net_agg_bytes_in'))).toEqual([
      'net_agg_bytes_in{interface="vnic0"}',
      'net_agg_bytes_in{interface="vnic1"}',
    ]);
    const hosts = world.cmon.requests.filter((r) => r.path === '/metrics').map((r) => r.host.split(':')[0]);
    expect(hosts.sort()).toEqual([cp.id, worker.id].map((id) => world.cmon.instanceHost(id)).sort());
  });

  it('is refused without a certificate: Prometheus then sees no targets, and no error', async () => {
    cluster();
    const found = await discover(undefined, { groups: ['k8s-a'] });
    expect(lastStatus()).toBe(401);
    expect(found).toMatchObject({ targets: [], exitCode: 0 });
    expect(found.error).toBeUndefined();
  });

  it('is refused with an expired certificate', async () => {
    cluster();
    const expired = cmonCertificate({
      account: 'demo',
      signer: world.keys.demo.privateKey,
      validFrom: new Date(Date.now() - 2 * 86_400_000),
      validUntil: new Date(Date.now() - 60_000),
    });
    const found = await discover(expired, { groups: ['k8s-a'] });
    expect(world.cmon.requests.at(-1)).toMatchObject({ status: 401, reason: 'client certificate expired' });
    expect(found.targets).toEqual([]);
  });

  it('is refused with a certificate signed by a key the account does not have', async () => {
    cluster();
    const foreign = cmonCertificate({ account: 'demo', signer: world.keys.foreign.privateKey });
    const found = await discover(foreign, { groups: ['k8s-a'] });
    expect(world.cmon.requests.at(-1)?.reason).toMatch(/^key .* not present on account$/);
    expect(lastStatus()).toBe(401);
    expect(found.targets).toEqual([]);
  });

  it('finds nothing when its groups are no valid triton.cmon.groups value (CMON answers 400)', async () => {
    cluster();
    const cert = cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey });
    const found = await discover(cert, { groups: ['k8s-a', 'k8s-a'] });
    expect(lastStatus()).toBe(400);
    expect(found.targets).toEqual([]);
  });

  it("reports an error when CMON's certificate is not trusted (no request reaches CMON)", async () => {
    cluster();
    const before = world.cmon.requests.length;
    const cert = cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey });
    const found = await discover(cert, {
      tls_config: { cert_file: 'cmon-demo-cert.pem', key_file: 'cmon-demo-key.pem' },
    });
    expect(found.exitCode).toBe(1);
    expect(found.error).toMatch(/certificate signed by unknown authority/);
    expect(world.cmon.requests.length).toBe(before);
  });
});
