import { describe, expect, it } from 'vitest';
import { edit, readArgs } from '../../../src/cluster/env-file.js';
import { EditError } from '../../../src/cluster/text.js';
import { changed, crlf, external, fixture, remove, set } from './support.js';

const VAR = 'KUBELET_KUBEADM_ARGS';

const ENV_130 = fixture('kubeadm-v1.30.14', 'var/lib/kubelet/kubeadm-flags.env');
const ENV_136 = fixture('kubeadm-v1.36.3', 'var/lib/kubelet/kubeadm-flags.env');

describe('environment file editor', () => {
  it('reads the flags kubeadm wrote', () => {
    expect(readArgs(ENV_130, VAR)).toEqual([
      '--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock',
      '--hostname-override=cp-1',
      '--node-ip=10.0.0.10',
      '--pod-infra-container-image=registry.k8s.io/pause:3.9',
    ]);
    expect(readArgs(ENV_136, VAR)).toEqual(['--hostname-override=cp-1', '--node-ip=10.0.0.10']);
    expect(readArgs(undefined, VAR)).toEqual([]);
  });

  it.each([
    ['1.30.14', ENV_130],
    ['1.36.3', ENV_136],
  ])('kubeadm %s: appends inside the quotes, nothing else changes; a second run is a no-op', (_, before) => {
    const changes = [...external, set('provider-id', 'digitalocean://12345')];
    const after = edit(before, VAR, changes);
    const line = before.toString().trimEnd();
    expect(after.toString()).toBe(
      `${line.slice(0, -1)} --cloud-provider=external --provider-id=digitalocean://12345"\n`,
    );
    expect(edit(after, VAR, changes).equals(after)).toBe(true);
  });

  it('replaces and removes words in place, keeping the spacing between the others', () => {
    const before = Buffer.from(
      '# managed by hand\nKUBELET_KUBEADM_ARGS="--cloud-provider=aws  --cloud-config=/etc/k/cloud.conf --v=2"\nOTHER=1\n',
    );
    const after = edit(before, VAR, external);
    expect(after.toString()).toBe(
      '# managed by hand\nKUBELET_KUBEADM_ARGS="--cloud-provider=external  --v=2"\nOTHER=1\n',
    );
    const last = Buffer.from('A="--v=2 --cloud-config=/x"\n');
    expect(edit(last, 'A', [remove('cloud-config')]).toString()).toBe('A="--v=2"\n');
    const only = Buffer.from("A='--cloud-config=/x'\n");
    expect(edit(only, 'A', [remove('cloud-config')]).toString()).toBe("A=''\n");
    const separate = Buffer.from('A="--cloud-provider aws --v=2"\n');
    expect(edit(separate, 'A', external).toString()).toBe('A="--cloud-provider external --v=2"\n');
  });

  it('edits the last assignment when the variable is set twice (the one systemd keeps)', () => {
    const before = Buffer.from('A="--v=1"\nA="--v=2"\n');
    expect(changed(before, edit(before, 'A', external))).toEqual({
      removed: ['A="--v=2"'],
      added: ['A="--v=2 --cloud-provider=external"'],
    });
  });

  it('keeps CRLF and a missing final newline', () => {
    const before = crlf('# kubelet\nKUBELET_EXTRA_ARGS=\n');
    expect(edit(before, 'KUBELET_EXTRA_ARGS', external).toString()).toBe(
      '# kubelet\r\nKUBELET_EXTRA_ARGS=--cloud-provider=external\r\n',
    );
    const noNewline = Buffer.from('KUBELET_KUBEADM_ARGS="--v=2"');
    expect(edit(noNewline, VAR, external).toString()).toBe(
      'KUBELET_KUBEADM_ARGS="--v=2 --cloud-provider=external"',
    );
  });

  it('quotes an unquoted value that would hold several words', () => {
    const before = Buffer.from('KUBELET_EXTRA_ARGS=--node-labels=a=b\n');
    expect(edit(before, 'KUBELET_EXTRA_ARGS', external).toString()).toBe(
      'KUBELET_EXTRA_ARGS="--node-labels=a=b --cloud-provider=external"\n',
    );
  });

  it('adds the variable to a file that lacks it, and creates a missing file', () => {
    const before = Buffer.from('# nothing here yet\nOTHER="x"');
    const after = edit(before, VAR, external);
    expect(after.toString()).toBe(
      '# nothing here yet\nOTHER="x"\nKUBELET_KUBEADM_ARGS="--cloud-provider=external"\n',
    );
    expect(edit(after, VAR, external).equals(after)).toBe(true);
    expect(edit(undefined, VAR, external).toString()).toBe(
      'KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n',
    );
    expect(edit(crlf('A=1\n'), VAR, external).toString()).toBe(
      'A=1\r\nKUBELET_KUBEADM_ARGS="--cloud-provider=external"\r\n',
    );
  });

  it('refuses what it cannot write or read safely', () => {
    expect(() => edit(Buffer.from('A="--v=2"\n'), 'A', [set('x', 'two words')])).toThrow(EditError);
    expect(() => edit(Buffer.from('A="--v=2 \\\n--x=1"\n'), 'A', external)).toThrow(/several lines/);
    expect(() => edit(Buffer.from('A="--v=2\n'), 'A', external)).toThrow(/unterminated/);
  });
});
