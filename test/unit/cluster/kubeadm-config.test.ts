import { describe, expect, it } from 'vitest';
import {
  edit,
  extraArgsStyle,
  readExtraArgs,
  readKubernetesVersion,
} from '../../../src/cluster/kubeadm-config.js';
import { EditError } from '../../../src/cluster/text.js';
import { changed, external, fixture, remove, set } from './support.js';

const V1BETA3 = fixture('kubeadm-v1.30.14', 'cluster-configuration.yaml').toString();
const V1BETA4 = fixture('kubeadm-v1.36.3', 'cluster-configuration.yaml').toString();

describe('ClusterConfiguration editor', () => {
  it('reads what kubeadm stored', () => {
    expect(extraArgsStyle(V1BETA3)).toBe('map');
    expect(extraArgsStyle(V1BETA4)).toBe('list');
    expect(readKubernetesVersion(V1BETA3)).toBe('v1.30.14');
    expect(readExtraArgs(V1BETA3, 'controllerManager')).toEqual([
      ['bind-address', '0.0.0.0'],
      ['cloud-config', '/etc/kubernetes/cloud.conf'],
    ]);
    expect(readExtraArgs(V1BETA3, 'apiServer')).toEqual([]);
    expect(readExtraArgs(V1BETA4, 'controllerManager')).toEqual([['bind-address', '0.0.0.0']]);
  });

  it('v1beta3 (maps): adds and removes keys in place, sorted like kubeadm writes them', () => {
    const after = edit(V1BETA3, {
      apiServer: [set('cloud-provider', 'external')],
      controllerManager: external,
    });
    expect(changed(V1BETA3, after)).toEqual({
      removed: ['    cloud-config: /etc/kubernetes/cloud.conf'],
      added: ['  extraArgs:', '    cloud-provider: external', '    cloud-provider: external'],
    });
    expect(after).toContain(
      'apiServer:\n  extraArgs:\n    cloud-provider: external\n  timeoutForControlPlane: 4m0s\n',
    );
    expect(readExtraArgs(after, 'controllerManager')).toEqual([
      ['bind-address', '0.0.0.0'],
      ['cloud-provider', 'external'],
    ]);
    expect(edit(after, { apiServer: [set('cloud-provider', 'external')], controllerManager: external })).toBe(
      after,
    );
  });

  it('v1beta4 (lists of {name, value}): appends entries, turns "apiServer: {}" into a block', () => {
    const changes = {
      apiServer: [set('kubelet-preferred-address-types', 'InternalIP,ExternalIP,Hostname')],
      controllerManager: external,
    };
    const after = edit(V1BETA4, changes);
    expect(changed(V1BETA4, after)).toEqual({
      removed: ['apiServer: {}'],
      added: [
        'apiServer:',
        '  extraArgs:',
        '  - name: kubelet-preferred-address-types',
        '    value: InternalIP,ExternalIP,Hostname',
        '  - name: cloud-provider',
        '    value: external',
      ],
    });
    expect(readExtraArgs(after, 'controllerManager')).toEqual([
      ['bind-address', '0.0.0.0'],
      ['cloud-provider', 'external'],
    ]);
    expect(edit(after, changes)).toBe(after);
  });

  it('v1beta4: replaces the first entry of a name, drops its duplicates and removes leftovers', () => {
    const before = V1BETA4.replace(
      'apiServer: {}\n',
      [
        'apiServer:',
        '  extraArgs:',
        '  # left over from a 1.32 cluster',
        '  - name: cloud-provider',
        '    value: external',
        '  - name: audit-log-maxage',
        '    value: "30"',
        '  - name: cloud-config',
        '    value: /etc/kubernetes/cloud.conf',
        '',
      ].join('\n'),
    );
    const after = edit(before, {
      apiServer: [remove('cloud-provider'), remove('cloud-config'), set('audit-log-maxage', '7')],
    });
    expect(readExtraArgs(after, 'apiServer')).toEqual([['audit-log-maxage', '7']]);
    expect(after).toContain('    value: "7"');
    const dup = V1BETA4.replace(
      '  - name: bind-address\n    value: 0.0.0.0\n',
      '  - name: cloud-provider\n    value: aws\n  - name: bind-address\n    value: 0.0.0.0\n  - name: cloud-provider\n    value: gce\n',
    );
    const fixed = edit(dup, { controllerManager: external });
    expect(readExtraArgs(fixed, 'controllerManager')).toEqual([
      ['cloud-provider', 'external'],
      ['bind-address', '0.0.0.0'],
    ]);
  });

  it('quotes values YAML would read as something else than a string', () => {
    const after = edit(V1BETA3, { apiServer: [set('profiling', 'false'), set('v', '2')] });
    expect(after).toContain('    profiling: "false"\n');
    expect(after).toContain('    v: "2"\n');
    expect(readExtraArgs(after, 'apiServer')).toEqual([
      ['profiling', 'false'],
      ['v', '2'],
    ]);
  });

  it('removing the last extraArg drops the key, and comments elsewhere survive', () => {
    const before = `# edited by hand\n${V1BETA3}`.replace('    bind-address: 0.0.0.0\n', '');
    const after = edit(before, { controllerManager: [remove('cloud-config')] });
    expect(after).toContain('# edited by hand\n');
    expect(changed(before, after)).toEqual({
      removed: ['controllerManager:', '  extraArgs:', '    cloud-config: /etc/kubernetes/cloud.conf'],
      added: ['controllerManager: {}'],
    });
  });

  it('refuses what it does not know', () => {
    expect(() =>
      edit('apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\n', { apiServer: external }),
    ).toThrow(/unsupported ClusterConfiguration apiVersion/);
    expect(() => edit('kind: InitConfiguration\n', {})).toThrow(EditError);
  });
});
