import { describe, expect, it } from 'vitest';
import {
  KubeconfigFormatError,
  mergeKubeconfigs,
  parseKubeconfig,
} from '../../../src/kube/kubeconfig-file.js';

const FULL = `
apiVersion: v1
kind: Config
clusters:
  - name: prod
    cluster:
      server: https://10.0.0.1:6443
      certificate-authority: pki/ca.crt
      tls-server-name: api.internal
      insecure-skip-tls-verify: false
      extensions:
        - name: client.authentication.k8s.io/exec
          extension: { audience: prod }
users:
  - name: admin
    user:
      client-certificate: /abs/admin.crt
      client-key: admin.key
      tokenFile: ../token
      as: someone
      as-groups: [a, b]
      as-user-extra: { scopes: [read] }
  - name: plugin
    user:
      exec:
        apiVersion: client.authentication.k8s.io/v1
        command: ./bin/get-token
        args: [--cluster, prod]
        env: [{ name: A, value: "1" }]
        interactiveMode: Never
        provideClusterInfo: true
  - name: on-path
    user:
      exec: { command: gke-gcloud-auth-plugin }
contexts:
  - name: prod
    context: { cluster: prod, user: admin, namespace: kube-system }
current-context: prod
`;

describe('parseKubeconfig', () => {
  const kc = parseKubeconfig(FULL, '/home/me/.kube/config');

  it('reads clusters, users and contexts; file paths relative to the file, exec commands only when they are paths', () => {
    expect(kc.currentContext).toBe('prod');
    expect(kc.clusters.get('prod')).toEqual({
      server: 'https://10.0.0.1:6443',
      certificateAuthority: '/home/me/.kube/pki/ca.crt',
      certificateAuthorityData: undefined,
      insecureSkipTlsVerify: false,
      tlsServerName: 'api.internal',
      proxyUrl: undefined,
      execExtension: { audience: 'prod' },
    });
    expect(kc.users.get('admin')).toMatchObject({
      clientCertificate: '/abs/admin.crt',
      clientKey: '/home/me/.kube/admin.key',
      tokenFile: '/home/me/token',
      impersonate: { user: 'someone', groups: ['a', 'b'], extra: { scopes: ['read'] } },
    });
    expect(kc.users.get('plugin')?.exec).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1',
      command: '/home/me/.kube/bin/get-token',
      args: ['--cluster', 'prod'],
      env: [{ name: 'A', value: '1' }],
      installHint: undefined,
      provideClusterInfo: true,
      interactiveMode: 'Never',
    });
    expect(kc.users.get('on-path')?.exec?.command).toBe('gke-gcloud-auth-plugin');
    expect(kc.contexts.get('prod')).toEqual({ cluster: 'prod', user: 'admin', namespace: 'kube-system' });
  });

  it('an empty file is an empty kubeconfig; JSON is YAML', () => {
    expect(parseKubeconfig('', '/k').contexts.size).toBe(0);
    expect(parseKubeconfig('# nothing yet\n\n', '/k').contexts.size).toBe(0);
    expect(parseKubeconfig('{"current-context": "x"}', '/k').currentContext).toBe('x');
  });

  it.each([
    ['clusters: [this is: not: yaml', /missed comma between flow collection entries \(1:24\)/],
    ['- a list', /not a YAML mapping/],
    ['clusters: {prod: {}}', /kubeconfig\.clusters must be a list/],
    ['clusters: [{cluster: {server: x}}]', /an entry of clusters has no name/],
    ['clusters: [{name: a, cluster: {server: 6443}}]', /clusters\[0\]\.cluster\.server must be a string/],
    ['clusters: [{name: a, cluster: {insecure-skip-tls-verify: "yes"}}]', /must be true or false/],
    ['users: [{name: u, user: {exec: {args: []}}}]', /exec section has no command/],
    ['users: [{name: u, user: {as-groups: x}}]', /as-groups must be a list of strings/],
  ])('%s is rejected with a reason', (text, reason) => {
    expect(() => parseKubeconfig(text, '/k')).toThrow(KubeconfigFormatError);
    expect(() => parseKubeconfig(text, '/k')).toThrow(reason);
  });

  it('within one file the first entry of a name wins', () => {
    const kc2 = parseKubeconfig(
      'clusters: [{name: a, cluster: {server: "https://one"}}, {name: a, cluster: {server: "https://two"}}]',
      '/k',
    );
    expect(kc2.clusters.get('a')?.server).toBe('https://one');
  });
});

describe('mergeKubeconfigs (KUBECONFIG=a:b:c)', () => {
  const a = parseKubeconfig(
    `
clusters: [{name: shared, cluster: {server: "https://from-a"}}]
users: [{name: u, user: {token: from-a}}]
`,
    '/a',
  );
  const b = parseKubeconfig(
    `
clusters:
  - {name: shared, cluster: {server: "https://from-b", tls-server-name: only-in-b}}
  - {name: b-only, cluster: {server: "https://b-only"}}
users: [{name: u, user: {token: from-b, username: not-merged}}]
contexts: [{name: ctx, context: {cluster: shared, user: u}}]
current-context: ctx
`,
    '/b',
  );
  const c = parseKubeconfig(
    'current-context: other\ncontexts: [{name: ctx, context: {cluster: b-only}}]',
    '/c',
  );
  const merged = mergeKubeconfigs([a, b, c]);

  it('takes each named entry whole from the first file that has it', () => {
    expect(merged.clusters.get('shared')).toMatchObject({
      server: 'https://from-a',
      tlsServerName: undefined,
    });
    expect(merged.clusters.get('b-only')?.server).toBe('https://b-only');
    expect(merged.users.get('u')).toMatchObject({ token: 'from-a', username: undefined });
    expect(merged.contexts.get('ctx')).toEqual({ cluster: 'shared', user: 'u', namespace: undefined });
  });

  it('takes current-context from the first file that sets it', () => {
    expect(merged.currentContext).toBe('ctx');
    expect(mergeKubeconfigs([c, b]).currentContext).toBe('other');
  });
});
