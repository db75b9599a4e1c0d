/**
 * The CMON simulator with discoverIncludeStopped (triton-cmon docs/README.md, lib/app.js _fetchVm):
 * stopped instances are discovered too, and their /metrics is 404 so that Prometheus' `up` is 0
 * (lib/endpoints/metrics.js).
 */
import { expect, it } from 'vitest';
import { cmonCertificate } from '../clouds/triton/cmon-cert.js';
import { cmonGet, useCmon } from '../helpers/use-cmon.js';

const world = useCmon({ includeStopped: true });

it('discovers stopped instances, whose metrics are then 404', async () => {
  const cert = cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey });
  const running = world.demo.addMachine({ name: 'up', tags: { 'triton.cmon.groups': 'k8s' } });
  const stopped = world.demo.addMachine({
    name: 'down',
    state: 'stopped',
    tags: { 'triton.cmon.groups': 'k8s' },
  });
  world.demo.addMachine({ name: 'gone', state: 'deleted', tags: { 'triton.cmon.groups': 'k8s' } });
  const answer = await cmonGet(world.cmon, '/v1/discover?groups=k8s', { cert });
  const containers = (JSON.parse(answer.body) as { containers: { vm_uuid: string; vm_state: string }[] })
    .containers;
  expect(containers.map((c) => [c.vm_uuid, c.vm_state]).sort()).toEqual(
    [
      [running.id, 'running'],
      [stopped.id, 'stopped'],
    ].sort(),
  );
  const metrics = await cmonGet(world.cmon, '/metrics', { host: world.cmon.instanceHost(stopped.id), cert });
  expect(metrics.status).toBe(404);
  expect(world.cmon.requests.at(-1)?.reason).toBe('not calling cmon-agent because VM is not running');
});
