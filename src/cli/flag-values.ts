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

export const SECRET_REF = /^([a-z0-9][-a-z0-9]*)\/([a-z0-9][-a-z0-9.]*)$/;
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

export const NODE_SELECTOR_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
export const NODE_SELECTOR_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
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

const QUANTITY_PAIR = '(cpu|memory|ephemeral-storage)=([0-9]+(\\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?|none)';
const QUANTITIES = new RegExp(`^(none|${QUANTITY_PAIR}(,${QUANTITY_PAIR})*)$`);
const QUANTITIES_EXPECTED =
  'resource=quantity pairs separated by commas (e.g. cpu=50m,memory=256Mi; memory=none drops one, none drops all)';

/**
 * `--requests` / `--limits cpu=50m,memory=256Mi`, as a container's resources name them: each pair
 * replaces that resource's default, `resource=none` removes it, and `none` removes the whole map
 * (null). The chart's `resources` value merges the same way (helm merges the user's map into the
 * default by key, and a null drops a key).
 */
export function parseQuantities(text: string): Record<string, string | null> | null {
  if (!QUANTITIES.test(text)) throw new UsageError(expectedText(QUANTITIES_EXPECTED, text));
  if (text === 'none') return null;
  return Object.fromEntries(
    text.split(',').map((pair) => {
      const [name, value] = pair.split('=') as [string, string];
      return [name, value === 'none' ? null : value];
    }),
  );
}

/** `base` with `change` merged in as helm merges values: by key, null removes (a null `change`: none at all). */
export function mergeQuantities(
  base: Readonly<Record<string, string>>,
  change: Record<string, string | null> | null,
): Record<string, string> | undefined {
  if (change === null) return undefined;
  const out: Record<string, string> = { ...base };
  for (const [name, value] of Object.entries(change)) {
    if (value === null) delete out[name];
    else out[name] = value;
  }
  return out;
}

export function quantitiesFlag(input: string): string {
  if (!QUANTITIES.test(input)) throw new Error(expectedText(QUANTITIES_EXPECTED, input));
  return input;
}

/** A variable name a shell and every program take (POSIX: letters, digits, _; not a digit first). */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The variables ccm's manifests set themselves (src/cli/manifests.ts, podSpec): not to be replaced. */
export const ENV_RESERVED = ['HOME', 'NODE_OPTIONS', 'MALLOC_ARENA_MAX'] as const;
const ENV_EXPECTED = 'NAME=VALUE (e.g. HTTPS_PROXY=http://proxy.corp.example:3128)';

/** `--env NAME=VALUE`: a variable of both pods, beside those ccm sets. */
export function parseEnv(text: string): [string, string] {
  const eq = text.indexOf('=');
  const name = eq < 0 ? text : text.slice(0, eq);
  if (eq < 0 || !ENV_NAME.test(name)) throw new UsageError(`--env: ${expectedText(ENV_EXPECTED, text)}`);
  if ((ENV_RESERVED as readonly string[]).includes(name))
    throw new UsageError(
      `--env: ${name} is set by ccm itself (${ENV_RESERVED.join(', ')}); give another variable`,
    );
  return [name, text.slice(eq + 1)];
}

export function envFlag(input: string): string {
  try {
    parseEnv(input);
  } catch (e) {
    throw new Error((e as Error).message.replace(/^--env: /, ''));
  }
  return input;
}
