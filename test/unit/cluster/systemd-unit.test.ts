import { describe, expect, it } from 'vitest';
import { edit, readArgs, readExecStart } from '../../../src/cluster/systemd-unit.js';
import { EditError } from '../../../src/cluster/text.js';
import { changed, crlf, external, fixture, remove, set } from './support.js';

const APISERVER = fixture('hard-way', 'etc/systemd/system/kube-apiserver.service');
const KUBELET = fixture('hard-way', 'etc/systemd/system/kubelet.service');

describe('systemd unit editor', () => {
  it('reads the ExecStart= command of a hard-way unit, quotes resolved', () => {
    const argv = readExecStart(APISERVER);
    expect(argv[0]).toBe('/usr/local/bin/kube-apiserver');
    expect(argv).toContain('--runtime-config=api/all=true');
    expect(readArgs(KUBELET)).toEqual([
      '--config=/var/lib/kubelet/kubelet-config.yaml',
      '--kubeconfig=/var/lib/kubelet/kubeconfig',
      '--node-ip=10.0.0.21',
      '--v=2',
    ]);
  });

  it('adds new flags on lines of their own after the last one; only that line gains " \\"', () => {
    const changes = [...external, set('provider-id', 'do://42')];
    const after = edit(KUBELET, changes);
    expect(changed(KUBELET, after)).toEqual({
      removed: ['  --v=2'],
      added: ['  --v=2 \\', '  --cloud-provider=external \\', '  --provider-id=do://42'],
    });
    expect(edit(after, changes).equals(after)).toBe(true);
  });

  it('replaces a value on its own line and removes a flag with its line', () => {
    const before = Buffer.from(
      [
        '[Service]',
        'ExecStart=/usr/local/bin/kube-controller-manager \\',
        '    --cloud-provider=aws \\',
        '    --cloud-config=/etc/kubernetes/cloud.conf \\',
        '    --v=2',
        'Restart=on-failure',
        '',
      ].join('\n'),
    );
    const after = edit(before, external);
    expect(changed(before, after)).toEqual({
      removed: ['    --cloud-provider=aws \\', '    --cloud-config=/etc/kubernetes/cloud.conf \\'],
      added: ['    --cloud-provider=external \\'],
    });
  });

  it('removing the last flag line ends the command on the line before it', () => {
    const before = Buffer.from(
      '[Service]\nExecStart=/bin/kubelet \\\n  --v=2 \\\n  --cloud-config=/x\nRestart=always\n',
    );
    expect(edit(before, [remove('cloud-config')]).toString()).toBe(
      '[Service]\nExecStart=/bin/kubelet \\\n  --v=2\nRestart=always\n',
    );
    // …and replacing it by a new flag puts that one last.
    expect(edit(before, external).toString()).toBe(
      '[Service]\nExecStart=/bin/kubelet \\\n  --v=2 \\\n  --cloud-provider=external\nRestart=always\n',
    );
  });

  it('indents a new line like the last flag line, even when that line holds several flags', () => {
    const before = Buffer.from(
      '[Service]\nExecStart=/bin/kubelet \\\n\t--a=1 --cloud-config=/x \\\n\t--b=2 --c=3\n',
    );
    expect(edit(before, external).toString()).toBe(
      '[Service]\nExecStart=/bin/kubelet \\\n\t--a=1 \\\n\t--b=2 --c=3 \\\n\t--cloud-provider=external\n',
    );
  });

  it('grows a one-line ExecStart= at its end and shares lines correctly', () => {
    const before = Buffer.from(
      '[Service]\nExecStart=/usr/bin/kubelet --v=2 --cloud-config=/x --node-ip=1.2.3.4\n',
    );
    expect(edit(before, external).toString()).toBe(
      '[Service]\nExecStart=/usr/bin/kubelet --v=2 --node-ip=1.2.3.4 --cloud-provider=external\n',
    );
  });

  it('edits the last ExecStart= of [Service] only, and keeps CRLF and a missing final newline', () => {
    const before = crlf(
      [
        '[Unit]',
        'ExecStart=/not/the/service --x',
        '[Service]',
        'ExecStart=',
        'ExecStart=/usr/local/bin/kubelet \\',
        '  --v=2',
      ].join('\n'),
    );
    const after = edit(before, external);
    expect(after.toString()).toBe(
      '[Unit]\r\nExecStart=/not/the/service --x\r\n[Service]\r\nExecStart=\r\nExecStart=/usr/local/bin/kubelet \\\r\n  --v=2 \\\r\n  --cloud-provider=external',
    );
    expect(edit(after, external).equals(after)).toBe(true);
  });

  it('understands %% and refuses values it would have to quote', () => {
    const before = Buffer.from('[Service]\nExecStart=/bin/k --hostname-override=%%H\n');
    expect(readArgs(before)).toEqual(['--hostname-override=%H']);
    expect(edit(before, [set('hostname-override', '%H')]).equals(before)).toBe(true);
    expect(edit(before, [set('x', '50%')]).toString()).toContain('--x=50%%');
    expect(() => edit(before, [set('x', 'a b')])).toThrow(EditError);
    expect(() => edit(Buffer.from('[Service]\nType=simple\n'), external)).toThrow(/no ExecStart/);
  });
});
