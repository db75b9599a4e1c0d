/**
 * Prometheus' own Triton service discovery (github.com/prometheus/prometheus discovery/triton, the
 * version test/prometheus-sd/go.mod pins), run once against a simulator: test/prometheus-sd is a
 * small Go program of ours that runs one refresh and prints the target groups (its main.go says why
 * not the prometheus binary). Built once per content hash into ~/.cache/ccm-sdk, as the SDK programs
 * are (test/helpers/go-sdk.ts); the first build takes about a minute with the Go module cache warm.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildGoProgram, runSdkProgram } from './go-sdk.js';

const DIR = fileURLToPath(new URL('../prometheus-sd/', import.meta.url));

export function buildTritonSd(): Promise<string> {
  return buildGoProgram(DIR, 'prometheus-triton-sd');
}

/** One triton_sd_configs entry, as a scrape job writes it (file paths relative to the run's folder). */
export interface TritonSdConfig {
  account: string;
  dns_suffix: string;
  endpoint: string;
  port?: number;
  groups?: string[];
  role?: 'container' | 'cn';
  version?: number;
  refresh_interval?: string;
  tls_config?: { ca_file?: string; cert_file?: string; key_file?: string; insecure_skip_verify?: boolean };
}

/** One target's /metrics as Prometheus' text parser read it (test/prometheus-sd/scrape.go). */
export interface Scraped {
  address: string;
  status?: number;
  content_type?: string;
  /** Each series as Prometheus prints it (`name{label="v"}`) and its value. */
  series?: Record<string, number>;
  error?: string;
}

export interface TritonSdResult {
  /** Every target of every group (Prometheus sends one group, its Source the discovery URL). */
  targets: Record<string, string>[];
  sources: string[];
  /** With `scrape`: every target's /metrics, fetched with the same TLS settings and parsed. */
  scrapes: Scraped[];
  /** What the discovery logged instead of sending targets (a refresh that failed). */
  error?: string;
  exitCode: number;
  stderr: string;
}

/**
 * Writes `config` as YAML (as JSON, which YAML reads) into `dir` and runs one discovery, and with
 * `scrape` fetches every target found. The program resolves every name to 127.0.0.1, in-process.
 */
export async function runTritonSd(
  bin: string,
  dir: string,
  config: TritonSdConfig,
  { scrape = false }: { scrape?: boolean } = {},
): Promise<TritonSdResult> {
  const file = join(dir, 'triton_sd.yml');
  writeFileSync(file, JSON.stringify(config));
  const run = await runSdkProgram(bin, [...(scrape ? ['-scrape'] : []), file], {}, 60_000);
  let out: {
    groups?: { source: string; targets: Record<string, string>[] }[];
    scrapes?: Scraped[];
    error?: string;
  } = {};
  try {
    out = JSON.parse(run.stdout) as typeof out;
  } catch {
    out = { error: `no JSON on stdout: ${run.stdout}` };
  }
  return {
    targets: (out.groups ?? []).flatMap((g) => g.targets),
    sources: (out.groups ?? []).map((g) => g.source),
    scrapes: out.scrapes ?? [],
    ...(out.error !== undefined ? { error: out.error } : {}),
    exitCode: run.exitCode,
    stderr: run.stderr,
  };
}

/** What `triton-sd -job` found: the first scrape job's targets after its relabel_configs (job.go). */
export interface PrometheusJobResult {
  job?: string;
  /** Each kept target's labels as Prometheus scrapes it: the series' target labels, __address__, __scheme__. */
  targets: Record<string, string>[];
  /** The machine ids the relabelling dropped. */
  dropped: string[];
  /** The discovered targets before relabelling. */
  discovered: Record<string, string>[];
  scrapes: Scraped[];
  error?: string;
  exitCode: number;
  stderr: string;
}

/**
 * Writes `prometheusYml` (a whole Prometheus configuration) into `dir`, loads it with Prometheus'
 * config package, runs one discovery of its first job's triton_sd_configs and relabels the targets
 * with the job's relabel_configs; `ca` is trusted where the job's TLS settings name no CA.
 */
export async function runPrometheusJob(
  bin: string,
  dir: string,
  prometheusYml: string,
  { ca, scrape = false }: { ca?: string; scrape?: boolean } = {},
): Promise<PrometheusJobResult> {
  const file = join(dir, 'prometheus.yml');
  writeFileSync(file, prometheusYml);
  const args = ['-job', ...(ca ? ['-ca', ca] : []), ...(scrape ? ['-scrape'] : []), file];
  const run = await runSdkProgram(bin, args, {}, 60_000);
  let out: {
    job?: string;
    groups?: { targets: Record<string, string>[] }[];
    targets?: Record<string, string>[];
    dropped?: string[];
    scrapes?: Scraped[];
    error?: string;
  } = {};
  try {
    out = JSON.parse(run.stdout) as typeof out;
  } catch {
    out = { error: `no JSON on stdout: ${run.stdout}` };
  }
  return {
    ...(out.job !== undefined ? { job: out.job } : {}),
    targets: out.targets ?? [],
    dropped: out.dropped ?? [],
    discovered: (out.groups ?? []).flatMap((g) => g.targets),
    scrapes: out.scrapes ?? [],
    ...(out.error !== undefined ? { error: out.error } : {}),
    exitCode: run.exitCode,
    stderr: run.stderr,
  };
}
