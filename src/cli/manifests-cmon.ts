/**
 * `ccm manifests --provider triton --cmon`: what a Prometheus needs to scrape the cluster's Nodes
 * through Triton's Container Monitor (CMON, issue 46). Like the rest of `ccm manifests` it reads no
 * cluster and no cloud: everything comes from the flags.
 *
 * The scrape job is the one node-triton's `triton profile cmon-certgen` writes (joyent/node-triton
 * lib/do_profile/profilecommon.js generateExampleConfig, 22bde35: triton_sd_configs with the account,
 * CMON's host name as both dns_suffix and endpoint, version 1, the client certificate for discovery and
 * for scraping, `instance` relabelled to the machine UUID), plus:
 * - `groups`: the cluster's CMON group, the one `--cmon-groups cluster` keeps in `triton.cmon.groups` on
 *   every Node's machine, so CMON discovers exactly the cluster's Nodes (and a `keep` on the same group,
 *   for a CMON that does not filter);
 * - the `node` label: the Node's name, which is its machine's name (`__meta_triton_machine_alias`)
 *   lowercased, as ccm itself matches a Node without a provider ID to its machine (InstanceIndex
 *   byNodeName); a machine without an alias gives its UUID, which is also a Node name ccm matches.
 *   The label is made at every discovery refresh from what CMON lists, so it follows Nodes as they come
 *   and go; docs/providers/triton.md says when it is not the Node's name.
 * - the certificate from the `kubernetes.io/tls` Secret `ccm secret create --provider triton --cmon`
 *   writes, read where the Prometheus Operator mounts a Secret of `spec.secrets`
 *   (/etc/prometheus/secrets/<name>/, its keys tls.crt and tls.key as files).
 *
 * Two forms (--cmon-format): `job`, the scrape job as a prometheus.yml holding only it; and
 * `additional-scrape-configs`, a Secret holding the job for the Prometheus Operator's
 * `spec.additionalScrapeConfigs`. Not a ScrapeConfig resource: monitoring.coreos.com/v1alpha1
 * ScrapeConfig has no Triton discovery, and its maintainers do not plan one (prometheus-operator
 * 6adcebc, pkg/apis/monitoring/v1alpha1/scrapeconfig_types.go has no tritonSDConfigs;
 * Documentation/proposals/accepted/202405-scrapeconfig-graduation.md lists `triton_sd_config` among
 * the discoveries "we don't plan to support").
 */
// A CMON group goes into the `keep` regex unescaped, which its characters (cmon-spec.ts) allow.

import { isIP } from 'node:net';
import { nodeCrypto } from '../node-modules.js';
import { CMON_CLUSTER_GROUP, CMON_ROLE_GROUP } from '../providers/triton/cmon-spec.js';
import { cmonPort } from '../providers/triton/cmon-url.js';
import { expectedText, UsageError } from './errors.js';
import type { SecretRef } from './flag-values.js';
import type { K8sObject } from './manifests.js';
import type { CmonFormat } from './manifests-cmon-flags.js';
import { objectYaml } from './output/object-yaml.js';

/** Where the Prometheus Operator mounts each Secret of a Prometheus' `spec.secrets`. */
export const PROMETHEUS_SECRETS_DIR = '/etc/prometheus/secrets';
/**
 * The oldest Prometheus that loads the job: its `node` rule's `action: lowercase` came in 2.36.0
 * (prometheus CHANGELOG.md: "Add lowercase and uppercase relabel action. #10641"). An older one
 * refuses the whole configuration file, not only this job.
 */
export const CMON_MIN_PROMETHEUS = '2.36';
const MIN_PROMETHEUS_COMMENT = `# Needs Prometheus ${CMON_MIN_PROMETHEUS} or later (the lowercase relabel action of the node label); an older one refuses the whole configuration.`;
/** The key of the additional-scrape-configs Secret that holds the job. */
export const ADDITIONAL_SCRAPE_CONFIGS_KEY = 'triton-cmon.yaml';
/** The key of the certificate Secret with CMON's CA (secret create --cmon --cmon-ca), as cert-manager names it. */
export const CMON_CA_KEY = 'ca.crt';

/** A Triton login (UFDS: a letter, then letters, digits, `_`, `.`, `@`, `-`). */
const LOGIN = /^[A-Za-z][A-Za-z0-9_.@-]*$/;

export interface CmonOptions {
  format: CmonFormat;
  /** --cmon-url: CMON's URL as CloudAPI's ListServices names it. */
  url: string;
  /** The account login (the certificate's subject). */
  account: string;
  /** The cluster's CMON group. */
  group: string;
  /** The kubernetes.io/tls Secret with the client certificate. */
  secret: SecretRef;
  /**
   * --cmon-ca: CMON's certificate is checked against the CA in the Secret's `ca.crt` (which
   * `ccm secret create --cmon --cmon-ca FILE` writes beside tls.crt and tls.key).
   */
  ca?: boolean;
  /**
   * --cmon-insecure-skip-verify: CMON's certificate is not checked. What CMON's default certificate
   * needs (triton-cmon boot/setup.sh: self-signed, its name in the CN only, which Go's TLS refuses
   * even when trusted) until its operator installs one with subjectAltNames.
   */
  insecureSkipVerify?: boolean;
}

export interface CmonEndpoint {
  host: string;
  port: number;
}

/** --cmon-url, checked: https, a name (CMON routes on `<vm_uuid>.<name>`), no path. */
export function parseCmonUrl(text: string): CmonEndpoint {
  const example = 'the cmon entry of `triton services`, e.g. https://cmon.us-east-1.triton.zone:9163';
  const bad = (why: string) => new UsageError(`--cmon-url: ${why}`);
  if (!URL.canParse(text)) throw bad(expectedText(example, text));
  const url = new URL(text);
  if (url.protocol !== 'https:') {
    throw bad(`CMON speaks HTTPS only, and Prometheus' Triton discovery asks it over https; got ${text}`);
  }
  if (
    url.username ||
    url.password ||
    (url.pathname !== '/' && url.pathname !== '') ||
    url.search ||
    url.hash
  ) {
    throw bad(`expected CMON's origin alone (https://NAME[:PORT]), got ${text}`);
  }
  const host = url.hostname.toLowerCase();
  if (isIP(host.replace(/^\[|\]$/g, '')) !== 0) {
    throw bad(
      `CMON serves each instance at <instance uuid>.${host}, so its URL must name it; got the address ${host}`,
    );
  }
  // The port as written (WHATWG URL drops a written 443); none: CMON's own, 9163.
  const port = cmonPort(text);
  if ('error' in port) throw bad(`${port.error}; got ${text}`);
  return { host, port: port.port };
}

/** Checks the account and group; a usage error in one line. */
export function checkCmonOptions(options: CmonOptions): CmonEndpoint {
  const endpoint = parseCmonUrl(options.url);
  if (!LOGIN.test(options.account) || options.account === 'my') {
    throw new UsageError(
      `--cmon-account: ${expectedText("the account's login name (the one CMON certificates name, never my)", options.account)}`,
    );
  }
  if (!CMON_CLUSTER_GROUP.test(options.group) && !CMON_ROLE_GROUP.test(options.group)) {
    throw new UsageError(
      `the CMON group "${options.group}" is no group ccm keeps: a cluster group (letters, digits and -, 1 to 100 characters) or a role group (<cluster group>_control-plane or _worker); pass --cmon-group, the name ccm run's --cmon-groups cluster=NAME gives`,
    );
  }
  return endpoint;
}

/**
 * --cmon-ca's file: PEM certificates. One that is CMON's own certificate with its name in the CN only
 * (boot/setup.sh's) is refused: Prometheus (Go) refuses that name even from a trusted certificate.
 */
export function checkCmonCa(pem: string, host: string): void {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new UsageError("--cmon-ca: expected a PEM file of certificates (CMON's CA)");
  for (const block of blocks) {
    let cert: import('node:crypto').X509Certificate;
    try {
      cert = new (nodeCrypto().X509Certificate)(block);
    } catch {
      throw new UsageError('--cmon-ca: a certificate of the file cannot be read');
    }
    if (!cert.subjectAltName && cert.checkHost(host, { subject: 'always' }) !== undefined) {
      throw new UsageError(
        `--cmon-ca: this is a certificate naming ${host} in its CN only (CMON's own, self-signed), which Prometheus refuses even when trusted (x509: certificate relies on legacy Common Name field); use --cmon-insecure-skip-verify until CMON has a certificate with subjectAltNames`,
      );
    }
  }
}

export type ScrapeJob = Record<string, unknown> & { job_name: string };

/** The scrape job (one entry of prometheus.yml's scrape_configs). */
export function cmonScrapeJob(options: CmonOptions): ScrapeJob {
  const { host, port } = checkCmonOptions(options);
  const dir = `${PROMETHEUS_SECRETS_DIR}/${options.secret.name}`;
  const tls: Record<string, unknown> = {
    ...(options.ca ? { ca_file: `${dir}/${CMON_CA_KEY}` } : {}),
    cert_file: `${dir}/tls.crt`,
    key_file: `${dir}/tls.key`,
    ...(options.insecureSkipVerify ? { insecure_skip_verify: true } : {}),
  };
  return {
    job_name: `triton-cmon-${options.group}`,
    scheme: 'https',
    tls_config: tls,
    triton_sd_configs: [
      {
        account: options.account,
        dns_suffix: host,
        endpoint: host,
        port,
        version: 1,
        groups: [options.group],
        tls_config: tls,
      },
    ],
    relabel_configs: [
      // CMON already lists only the machines of the group; this keeps it so with one that does not filter.
      { source_labels: ['__meta_triton_groups'], regex: `.*,${options.group},.*`, action: 'keep' },
      // As node-triton's example: the machine UUID is the instance (the address is <uuid>.<cmon name>).
      { source_labels: ['__meta_triton_machine_id'], target_label: 'instance' },
      // The Node's name: its machine's name, lowercased as the kubelet lowercases its hostname…
      { source_labels: ['__meta_triton_machine_alias'], target_label: 'node', action: 'lowercase' },
      // …or, for a machine without one, its UUID (a Node named after its machine's id is that machine).
      {
        source_labels: ['node', '__meta_triton_machine_id'],
        regex: ';(.+)',
        target_label: 'node',
        replacement: '$1',
      },
    ],
  };
}

/** --cmon-format job: a prometheus.yml whose only content is the job. */
export function cmonPrometheusConfig(options: CmonOptions): { scrape_configs: ScrapeJob[] } {
  return { scrape_configs: [cmonScrapeJob(options)] };
}

/** The YAML of --cmon-format job, with how the Secret is to be mounted in comments. */
export function cmonPrometheusYaml(options: CmonOptions): string {
  const config = cmonPrometheusConfig(options);
  const { namespace, name } = options.secret;
  return [
    `# Triton CMON: the Nodes of the cluster whose CMON group is ${options.group}`,
    '# (ccm manifests --provider triton --cmon). Prometheus reads the client certificate from the',
    `# kubernetes.io/tls Secret ${namespace}/${name} mounted at ${PROMETHEUS_SECRETS_DIR}/${name}`,
    `# (Prometheus Operator: spec.secrets: [${name}], in the Prometheus' namespace).`,
    MIN_PROMETHEUS_COMMENT,
    ...(options.ca
      ? [
          `# CMON's certificate is checked against the Secret's ${CMON_CA_KEY}: ccm secret create --provider triton --cmon --cmon-ca FILE writes it.`,
        ]
      : []),
    ...(options.insecureSkipVerify
      ? [
          "# insecure_skip_verify: CMON's own certificate (self-signed, its name in the CN only) is refused by",
          '# Prometheus even when trusted; drop it once CMON has a certificate with subjectAltNames.',
        ]
      : []),
    objectYaml(config),
  ].join('\n');
}

/** --cmon-format additional-scrape-configs: the job in a Secret for spec.additionalScrapeConfigs. */
export function cmonAdditionalScrapeConfigs(options: CmonOptions): K8sObject {
  const job = cmonScrapeJob(options);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `${options.secret.name}-scrape`,
      namespace: options.secret.namespace,
      labels: { 'app.kubernetes.io/name': 'ccm', 'app.kubernetes.io/component': 'cmon' },
    },
    type: 'Opaque',
    stringData: { [ADDITIONAL_SCRAPE_CONFIGS_KEY]: `${MIN_PROMETHEUS_COMMENT}\n${objectYaml([job])}` },
  };
}
