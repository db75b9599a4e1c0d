/** `ccm run`'s start line: version, provider, the controllers that run, leader election and identity. */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/cli/log.js';
import { announceStart, startLine } from '../../../../src/cli/run/start-line.js';
import { selectControllers } from '../../../../src/controllers/manager.js';
import { logSink } from '../../../helpers/run.js';

const lease = {
  durationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2000,
  name: 'ccm',
  namespace: 'kube-system',
};

describe('startLine', () => {
  it('names the version, provider, controllers, the Lease and the identity', () => {
    expect(
      startLine(
        { version: '1.2.3', leaderElect: true, lease },
        { provider: 'digitalocean', controllers: ['cloud-node', 'service'], identity: 'host_ab12' },
      ),
    ).toEqual({
      fields: {
        version: '1.2.3',
        provider: 'digitalocean',
        controllers: ['cloud-node', 'service'],
        leaderElection: 'kube-system/ccm',
        identity: 'host_ab12',
      },
      message:
        'ccm 1.2.3 starting: provider digitalocean, controllers cloud-node, service, leader election kube-system/ccm, identity host_ab12',
    });
  });

  it('says off, none and unknown rather than leaving a gap', () => {
    const { fields, message } = startLine(
      { leaderElect: false, lease },
      { provider: 'cloudlycke', controllers: [], identity: 'host_ab12' },
    );
    expect(message).toBe(
      'ccm starting: provider cloudlycke, controllers none, leader election off, identity host_ab12',
    );
    expect(fields).toMatchObject({ version: 'unknown', leaderElection: 'off', controllers: [] });
  });
});

describe('announceStart', () => {
  const said = (controllers: string, serving?: string) => {
    const { lines, stream } = logSink();
    announceStart(
      createLogger('debug', { destination: stream, pretty: false }),
      { version: '1.2.3', leaderElect: false, lease, controllers },
      {
        provider: 'cloudlycke',
        selection: selectControllers(controllers),
        identity: 'h_1',
        credentials: 'flags and environment',
        serving,
      },
    );
    return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  };

  it('logs the start line with its fields, then where the credentials came from', () => {
    const lines = said('-route');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'ccm 1.2.3 starting: provider cloudlycke, controllers cloud-node, cloud-node-lifecycle, service, leader election off, identity h_1',
      version: '1.2.3',
      provider: 'cloudlycke',
      controllers: ['cloud-node', 'cloud-node-lifecycle', 'service'],
      leaderElection: 'off',
      identity: 'h_1',
    });
    expect(lines[1]).toMatchObject({ level: 30, msg: 'cloud credentials from flags and environment' });
  });

  it('says where it serves after what runs (the port was bound before)', () => {
    expect(said('*', 'https://127.0.0.1:10258').map((l) => l.msg)).toEqual([
      'ccm 1.2.3 starting: provider cloudlycke, controllers cloud-node, cloud-node-lifecycle, service, route, leader election off, identity h_1',
      'serving /healthz, /readyz and /metrics on https://127.0.0.1:10258',
      'cloud credentials from flags and environment',
    ]);
  });

  it('warns when --controllers enables none', () => {
    const lines = said('-cloud-node,-cloud-node-lifecycle,-service,-route');
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [30, 'ccm 1.2.3 starting: provider cloudlycke, controllers none, leader election off, identity h_1'],
      [
        40,
        '--controllers -cloud-node,-cloud-node-lifecycle,-service,-route enables no controller: this process serves health and metrics only',
      ],
      [30, 'cloud credentials from flags and environment'],
    ]);
  });
});
