/**
 * The values of `ccm manifests --cmon`'s flags, without imports: the command's flag definitions read
 * them at every start, and the renderer (manifests-cmon.ts) is loaded only with --cmon.
 */
export const CMON_FORMATS = ['job', 'additional-scrape-configs'] as const;
export type CmonFormat = (typeof CMON_FORMATS)[number];

/**
 * The kubernetes.io/tls Secret `ccm secret create --provider triton --cmon` writes by default
 * (cmon-certificate.ts CMON_SECRET_NAME, beside the credentials' `triton`); this module imports
 * nothing, so the name is repeated, and cmon-manifests-flags.test.ts checks the two agree.
 */
export const CMON_SECRET_DEFAULT = 'kube-system/triton-cmon';
