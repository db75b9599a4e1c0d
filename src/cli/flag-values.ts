/**
 * The shape of flag values that is known before anything is read (a provider name, a URL, a
 * Secret's namespace/name, a node selector), checked while oclif parses: a bad value is one line in
 * the style every flag uses, `--flag: expected …, got "…"` (exit 2), said before the kubeconfig is
 * looked for. Light on purpose: every command's start imports it.
 */
import { closest } from '../closest.js';
import { providerNames, unknownProviderText } from '../providers/registry.js';
import { parseCmonGroups } from '../providers/triton/cmon-spec.js';
import { expectedText, UsageError } from './errors.js';

/** "; did you mean X?" when `typed` is a likely typo of one of `candidates`, else "". */
export function didYouMean(typed: string, candidates: readonly string[]): string {
  const near = closest(typed, candidates);
  return near && near !== typed ? `; did you mean ${near}?` : '';
}

/** `--provider` (or CCM_PROVIDER, named as `env`): a provider ccm has, in any case. */
export function providerName(input: string, env?: string): string {
  const name = input.trim().toLowerCase();
  if (providerNames.includes(name)) return name;
  throw new Error(unknownProviderText(input, env));
}

/** `--cloud-api-url`: an http(s) URL (an empty value, an unset shell variable, would mean the real API). */
export function httpUrlFlag(input: string): string {
  if (!URL.canParse(input) || !/^https?:$/.test(new URL(input).protocol))
    throw new Error(expectedText('an http(s) URL (e.g. https://api.example.com)', input));
  return input;
}

export interface SecretRef {
  namespace: string;
  name: string;
}

const SECRET_REF = /^([a-z0-9][-a-z0-9]*)\/([a-z0-9][-a-z0-9.]*)$/;
const SECRET_REF_EXPECTED = 'namespace/name (e.g. kube-system/digitalocean)';

/** `--credentials-secret namespace/name`, as oclif's parse step checks it. */
export function secretRefFlag(input: string): string {
  if (!SECRET_REF.test(input)) throw new Error(expectedText(SECRET_REF_EXPECTED, input));
  return input;
}

/** `--credentials-secret namespace/name`, split; a usage error (exit 2) in the flag's style. */
export function parseSecretRef(ref: string): SecretRef {
  const match = SECRET_REF.exec(ref);
  if (!match) throw new UsageError(`--credentials-secret: ${expectedText(SECRET_REF_EXPECTED, ref)}`);
  return { namespace: match[1] as string, name: match[2] as string };
}

const NODE_SELECTOR_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const NODE_SELECTOR_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const NODE_SELECTOR_EXPECTED =
  'label=value pairs separated by commas (e.g. node-role.kubernetes.io/system=true)';

/** `--node-selector key=value[,key=value…]` as kubectl's `-l` equality selectors, validated as labels. */
export function parseNodeSelector(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const eq = pair.indexOf('=');
    const key = (eq < 0 ? pair : pair.slice(0, eq)).trim();
    const value = eq < 0 ? undefined : pair.slice(eq + 1).trim();
    if (value === undefined || !NODE_SELECTOR_KEY.test(key) || !NODE_SELECTOR_VALUE.test(value))
      throw new UsageError(`--node-selector: ${expectedText(NODE_SELECTOR_EXPECTED, text)}`);
    labels[key] = value;
  }
  return labels;
}

/** `--node-selector`, as oclif's parse step checks it (the text is kept; the command splits it). */
export function nodeSelectorFlag(input: string): string {
  try {
    parseNodeSelector(input);
  } catch {
    throw new Error(expectedText(NODE_SELECTOR_EXPECTED, input));
  }
  return input;
}

/**
 * A boolean's `=value`: what Go's strconv.ParseBool takes, which the reference controllers' pflag
 * booleans read (`--leader-elect=0`), in any case.
 */
export function parseBoolean(text: string): boolean | undefined {
  const word = text.toLowerCase();
  if (word === 'true' || word === 't' || word === '1') return true;
  if (word === 'false' || word === 'f' || word === '0') return false;
  return undefined;
}

/** `--cmon-groups` (Triton): cluster, cluster=NAME, role, comma-separated, or none (cmon-spec.ts). */
export function cmonGroupsFlag(input: string): string {
  parseCmonGroups(input);
  return input;
}

const TOLERATION = /^([^=:\s]+)(?:=([^:\s]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/;
const TOLERATION_EXPECTED =
  'key[=value]:Effect as kubectl taint names a taint (e.g. dedicated=ccm:NoSchedule)';

/** `--toleration key[=value]:Effect`: the toleration of that taint (Exists without a value). */
export function parseToleration(text: string): Record<string, string> {
  const match = TOLERATION.exec(text.trim());
  if (!match) throw new UsageError(`--toleration: ${expectedText(TOLERATION_EXPECTED, text)}`);
  const [, key, value, effect] = match as unknown as [string, string, string | undefined, string];
  return value === undefined
    ? { key, operator: 'Exists', effect }
    : { key, operator: 'Equal', value, effect };
}

export function tolerationFlag(input: string): string {
  if (!TOLERATION.test(input.trim())) throw new Error(expectedText(TOLERATION_EXPECTED, input));
  return input;
}

const QUANTITIES =
  /^(cpu|memory|ephemeral-storage)=[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?(,(cpu|memory|ephemeral-storage)=[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?)*$/;
const QUANTITIES_EXPECTED = 'resource=quantity pairs separated by commas (e.g. cpu=50m,memory=256Mi)';

/** `--requests` / `--limits cpu=50m,memory=256Mi`, as a container's resources name them. */
export function parseQuantities(text: string): Record<string, string> {
  if (!QUANTITIES.test(text)) throw new UsageError(expectedText(QUANTITIES_EXPECTED, text));
  return Object.fromEntries(text.split(',').map((pair) => pair.split('=') as [string, string]));
}

export function quantitiesFlag(input: string): string {
  if (!QUANTITIES.test(input)) throw new Error(expectedText(QUANTITIES_EXPECTED, input));
  return input;
}
