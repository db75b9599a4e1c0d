import { describe, expect, it } from 'vitest';
import { edit, readArgs, readImage } from '../../../src/cluster/static-pod.js';
import { EditError } from '../../../src/cluster/text.js';
import { changed, crlf, external, fixture, remove, set } from './support.js';

const KCM_130 = fixture('kubeadm-v1.30.14', 'etc/kubernetes/manifests/kube-controller-manager.yaml');
const API_136 = fixture('kubeadm-v1.36.3', 'etc/kubernetes/manifests/kube-apiserver.yaml');

describe('static pod manifest editor', () => {
  it('reads the command list and the image of the real kubeadm manifests', () => {
    const args = readArgs(API_136, 'kube-apiserver');
    expect(args[0]).toBe('kube-apiserver');
    expect(args).toContain('--secure-port=6443');
    expect(readImage(API_136, 'kube-apiserver')).toBe('registry.k8s.io/kube-apiserver:v1.36.3');
    expect(readImage(KCM_130)).toBe('registry.k8s.io/kube-controller-manager:v1.30.14');
  });

  it('kubeadm 1.30 controller manager: adds --cloud-provider at the end, drops --cloud-config, nothing else', () => {
    const after = edit(KCM_130, external, 'kube-controller-manager');
    expect(changed(KCM_130, after)).toEqual({
      removed: ['    - --cloud-config=/etc/kubernetes/cloud.conf'],
      added: ['    - --cloud-provider=external'],
    });
    const args = readArgs(after);
    expect(args.at(-1)).toBe('--cloud-provider=external');
    expect(args.slice(0, -1)).toEqual(readArgs(KCM_130).filter((a) => !a.startsWith('--cloud-config')));
    expect(edit(after, external, 'kube-controller-manager').equals(after)).toBe(true);
  });

  it('returns the same bytes when every change is in effect', () => {
    const after = edit(API_136, [remove('cloud-provider'), set('secure-port', '6443')]);
    expect(after.equals(API_136)).toBe(true);
  });

  it('keeps CRLF line endings, on the new line too', () => {
    const before = crlf(KCM_130);
    const after = edit(before, external);
    expect(after.toString()).not.toMatch(/[^\r]\n/);
    expect(changed(before, after)).toEqual(changed(KCM_130, edit(KCM_130, external)));
    expect(edit(after, external).equals(after)).toBe(true);
  });

  it('replaces a value in its own quoting style, and a new line copies the quoting of the last item', () => {
    const before = Buffer.from(
      [
        'apiVersion: v1',
        'kind: Pod',
        'spec:',
        '  containers:',
        '    - name: kube-controller-manager # indented list, comments',
        '      command:',
        '        - "kube-controller-manager"',
        "        - '--cloud-provider=aws'",
        '        - "--v=2"   # verbosity',
        '      image: registry.k8s.io/kube-controller-manager:v1.32.0',
        '',
      ].join('\n'),
    );
    const after = edit(before, [set('cloud-provider', 'external'), set('cluster-name', 'it\'s "quoted"')]);
    expect(changed(before, after)).toEqual({
      removed: ["        - '--cloud-provider=aws'"],
      added: ["        - '--cloud-provider=external'", '        - "--cluster-name=it\'s \\"quoted\\""'],
    });
    expect(readArgs(after)).toEqual([
      'kube-controller-manager',
      '--cloud-provider=external',
      '--v=2',
      '--cluster-name=it\'s "quoted"',
    ]);
  });

  it('quotes a plain value that YAML would not read back as the same string', () => {
    const before = Buffer.from(
      'spec:\n  containers:\n  - command:\n    - kube-controller-manager\n    - --v=2\n',
    );
    const after = edit(before, [set('controllers', '*,bootstrapsigner'), set('x', 'a: b')]);
    expect(changed(before, after).added).toEqual([
      '    - --controllers=*,bootstrapsigner',
      '    - "--x=a: b"',
    ]);
    expect(readArgs(after).slice(2)).toEqual(['--controllers=*,bootstrapsigner', '--x=a: b']);
  });

  it('appends to args when the container has args, and to the named container', () => {
    const before = Buffer.from(
      [
        'spec:',
        '  containers:',
        '  - name: sidecar',
        '    command: [sleep, infinity]',
        '  - name: kube-apiserver',
        '    command:',
        '    - kube-apiserver',
        '    args:',
        '    - --cloud-config=/etc/kubernetes/cloud.conf',
        '    - --v=2',
      ].join('\n'),
    );
    const after = edit(before, external, 'kube-apiserver');
    // The file had no final newline: the new last line has none either, and the old last line gets one.
    expect(after.toString().endsWith('    - --v=2\n    - --cloud-provider=external')).toBe(true);
    expect(changed(before, after)).toEqual({
      removed: ['    - --cloud-config=/etc/kubernetes/cloud.conf', '    - --v=2'],
      added: ['    - --v=2', '    - --cloud-provider=external'],
    });
  });

  it('removing the last item and appending keeps the list well formed', () => {
    const before = Buffer.from(
      'spec:\n  containers:\n  - command:\n    - kcm\n    - --cloud-config=/x\n    image: i:v1.30.0\n',
    );
    const after = edit(before, external);
    expect(after.toString()).toBe(
      'spec:\n  containers:\n  - command:\n    - kcm\n    - --cloud-provider=external\n    image: i:v1.30.0\n',
    );
  });

  it('refuses layouts it cannot edit line by line', () => {
    const flow = Buffer.from('spec:\n  containers:\n  - command: [kube-apiserver, --v=2]\n');
    expect(() => edit(flow, external)).toThrow(EditError);
    expect(() => edit(Buffer.from('kind: Pod\n'), external)).toThrow(/no spec.containers/);
    expect(() => edit(Buffer.from([0xff, 0xfe, 0x00]), external)).toThrow(/not UTF-8/);
  });
});
