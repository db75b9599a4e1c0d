import { describe, expect, it } from 'vitest';
import {
  apiserverHasCloudProviderFlag,
  atLeast,
  compareVersions,
  formatVersion,
  parseVersion,
  versionFromImage,
  versionFromOutput,
} from '../../../src/cluster/versions.js';

describe('versions', () => {
  it.each([
    ['v1.30.14', { major: 1, minor: 30, patch: 14 }],
    ['1.36.3', { major: 1, minor: 36, patch: 3 }],
    ['v1.33', { major: 1, minor: 33, patch: 0 }],
    ['v1.33.0-rc.1', { major: 1, minor: 33, patch: 0 }],
    ['v1.31.2+k3s1', { major: 1, minor: 31, patch: 2 }],
    [' v1.32.4\n', { major: 1, minor: 32, patch: 4 }],
  ])('parses %j', (text, version) => {
    expect(parseVersion(text)).toEqual(version);
  });

  it.each(['latest', '', 'v1', 'sha256:abc', '1.x.2', 'kubernetes-1.30'])(
    'does not read %j as a version',
    (text) => {
      expect(parseVersion(text)).toBeUndefined();
    },
  );

  it.each([
    ['registry.k8s.io/kube-apiserver:v1.36.3', '1.36.3'],
    ['registry.k8s.io/kube-apiserver:v1.30.14@sha256:0123abcd', '1.30.14'],
    ['my-registry:5000/k8s/kube-controller-manager:v1.32.1', '1.32.1'],
    ['kube-apiserver:1.29.0', '1.29.0'],
  ])('reads the tag of %s', (image, expected) => {
    const v = versionFromImage(image);
    expect(v && `${v.major}.${v.minor}.${v.patch}`).toBe(expected);
  });

  it.each([
    'registry.k8s.io/kube-apiserver@sha256:0123abcd',
    'my-registry:5000/kube-apiserver',
    'registry.k8s.io/kube-apiserver:latest',
  ])('finds no version in %s', (image) => {
    expect(versionFromImage(image)).toBeUndefined();
  });

  it('reads `--version` output', () => {
    expect(versionFromOutput('Kubernetes v1.32.4\n')).toEqual({ major: 1, minor: 32, patch: 4 });
    expect(versionFromOutput('kubelet version: unknown')).toBeUndefined();
  });

  it('compares and formats', () => {
    const a = { major: 1, minor: 32, patch: 9 };
    const b = { major: 1, minor: 33, patch: 0 };
    expect(compareVersions(a, b)).toBeLessThan(0);
    expect(compareVersions(b, a)).toBeGreaterThan(0);
    expect(compareVersions(a, { ...a })).toBe(0);
    expect(atLeast(b, 1, 33)).toBe(true);
    expect(atLeast(a, 1, 33)).toBe(false);
    expect(formatVersion(a)).toBe('v1.32.9');
  });

  it('kube-apiserver has --cloud-provider below 1.33 only', () => {
    expect(apiserverHasCloudProviderFlag({ major: 1, minor: 30, patch: 14 })).toBe(true);
    expect(apiserverHasCloudProviderFlag({ major: 1, minor: 32, patch: 99 })).toBe(true);
    expect(apiserverHasCloudProviderFlag({ major: 1, minor: 33, patch: 0 })).toBe(false);
    expect(apiserverHasCloudProviderFlag({ major: 1, minor: 36, patch: 3 })).toBe(false);
  });
});
