/**
 * Kubernetes versions as `cluster prepare` needs them: parsed from "v1.30.14", an image tag or a
 * binary's `--version` line, compared, and the one rule that depends on them.
 */
import type { Version } from './types.js';

// "v1.30.14", "1.30.14", "v1.33.0-rc.1", "v1.30.14+k3s1", "1.30" (patch 0). Anchored, so a digest or a
// random tag ("latest", "sha256-…") is not read as a version.
const VERSION = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.+-]*)?$/;

/** "v1.30.14" → {1, 30, 14}; undefined for anything that is not a version. */
export function parseVersion(text: string): Version | undefined {
  const m = VERSION.exec(text.trim());
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0) };
}

/**
 * The version in an image reference's tag: "registry.k8s.io/kube-apiserver:v1.36.3" → 1.36.3; also with a
 * registry port or a digest after the tag ("…:v1.36.3@sha256:…"). A digest alone has no version.
 */
export function versionFromImage(image: string): Version | undefined {
  const withoutDigest = image.trim().split('@')[0] ?? '';
  const lastSlash = withoutDigest.lastIndexOf('/');
  const nameAndTag = withoutDigest.slice(lastSlash + 1);
  const colon = nameAndTag.lastIndexOf(':');
  if (colon < 0) return undefined;
  return parseVersion(nameAndTag.slice(colon + 1));
}

/** The first version in a `--version` output: "Kubernetes v1.30.14" → 1.30.14. */
export function versionFromOutput(output: string): Version | undefined {
  for (const word of output.split(/\s+/)) {
    if (/^v\d+\.\d+/.test(word)) {
      const v = parseVersion(word);
      if (v) return v;
    }
  }
  return undefined;
}

/** "v1.30.14". */
export function formatVersion(v: Version): string {
  return `v${v.major}.${v.minor}.${v.patch}`;
}

/** Negative, zero or positive, like a sort comparator. */
export function compareVersions(a: Version, b: Version): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** Whether `v` is at least major.minor (any patch). */
export function atLeast(v: Version, major: number, minor: number): boolean {
  return compareVersions(v, { major, minor, patch: 0 }) >= 0;
}

/** kube-apiserver dropped --cloud-provider (and --cloud-config) in 1.33: it refuses to start with them. */
export const APISERVER_CLOUD_FLAGS_REMOVED: Version = { major: 1, minor: 33, patch: 0 };

/** Whether this kube-apiserver still accepts --cloud-provider (deprecated in 1.29, removed in 1.33). */
export function apiserverHasCloudProviderFlag(v: Version): boolean {
  return compareVersions(v, APISERVER_CLOUD_FLAGS_REMOVED) < 0;
}
