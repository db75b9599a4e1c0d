import { BlockList, isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { nodeHttp } from './node-modules.js';

/**
 * Which proxy a request goes through: client-go's rule, which is Go's `http.ProxyFromEnvironment`
 * (golang.org/x/net/http/httpproxy/proxy.go, `FromEnvironment`, `proxyForURL`, `useProxy`, `init`),
 * used by client-go's transport unless a kubeconfig cluster sets `proxy-url` (client-go
 * transport/cache.go, tools/clientcmd/client_config.go). Written here from that description, not
 * copied:
 *
 * - https requests use HTTPS_PROXY (or https_proxy), http requests HTTP_PROXY (or http_proxy); the
 *   upper-case name is read first, and an empty value counts as unset. An https request never falls
 *   back to HTTP_PROXY.
 * - A value without a scheme (`proxy.corp:3128`) is http://.
 * - NO_PROXY (or no_proxy), comma-separated: `*` (nothing is proxied); an IP address (`10.0.0.5`) or a
 *   CIDR (`10.0.0.0/8`, `fd00::/8`), which match only addresses written as such in the URL; a domain
 *   (`corp.example`), which matches it and every subdomain, with a leading `.` (or `*.`) only the
 *   subdomains; an address or a domain may carry a port (`10.0.0.5:6443`, `corp.example:443`,
 *   `[fd00::1]:443`), and then matches only that port. Entries are trimmed and compared in lower
 *   case; one that cannot be read is skipped, as Go skips it.
 * - `localhost` and loopback addresses (127.0.0.0/8, ::1) are never proxied, whatever the variables
 *   say.
 * - In a CGI environment (REQUEST_METHOD set) an http request refuses HTTP_PROXY, which a CGI
 *   client could have set through a `Proxy:` header ("httpoxy", golang.org/s/cgihttpproxy).
 *
 * Where ccm differs, it says so instead of going on: Go skips a proxy variable it cannot parse and
 * goes direct, and fails later on a scheme it cannot use; ccm refuses both in one line naming the
 * variable. Proxies are http:// or https:// (their certificate checked against the system's CAs);
 * socks5 is refused.
 */
export interface ProxySetting {
  /** The proxy's URL, credentials included: for the agent only, never shown. */
  url: URL;
  /** The proxy as shown in messages: scheme, host and port, never the credentials. */
  shown: string;
  /** Where it was set: `HTTPS_PROXY`, `https_proxy`, `proxy-url of cluster "x" in the kubeconfig`. */
  source: string;
  /** From the environment, which NO_PROXY can overrule for a host (a kubeconfig's proxy-url cannot). */
  fromEnv: boolean;
}

/** A proxy setting that cannot be used: one line naming where it was set. */
export class ProxyConfigError extends Error {}

/**
 * A request that failed at the proxy: it could not be reached, or did not open the tunnel (a 407 for
 * missing or wrong credentials, a 403 for a host it does not allow, a 502 when it could not reach
 * the host itself).
 */
export class ProxyError extends Error {
  constructor(
    message: string,
    /** Another attempt would meet the same answer (407, 403): no point retrying. */
    readonly lasting: boolean,
  ) {
    super(message);
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

/** The proxy for a request to `target`, or undefined to connect directly; throws ProxyConfigError. */
export type ProxyFor = (target: URL) => ProxySetting | undefined;

/** Go's getEnvAny: the first of the names with a non-empty value. */
function firstSet(env: Env, ...names: string[]): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = env[name];
    if (value) return { name, value };
  }
  return undefined;
}

/** The proxy as shown: no user name or password, no path. */
export function shownProxy(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

/**
 * A proxy URL from the environment, "a complete URL or a host[:port], in which case the http scheme is
 * assumed" (Go's FromEnvironment): as Go's parseProxy, a value without a scheme and a host is read
 * again with http:// in front, but only one without `://` (Go's second reading of a broken complete
 * URL, `http://http://[::1`, is no proxy anyone meant).
 */
function parseEnvProxy(value: string, source: string): ProxySetting {
  let url: URL | undefined;
  if (URL.canParse(value)) url = new URL(value);
  if (!url?.host && !value.includes('://') && URL.canParse(`http://${value}`))
    url = new URL(`http://${value}`);
  if (!url?.host) {
    throw new ProxyConfigError(`${source} is not a proxy URL; set it to http://host:port, or unset it`);
  }
  return usable(url, source, true);
}

/** A kubeconfig cluster's proxy-url, which client-go (tools/clientcmd/helpers.go) takes as http, https or socks5. */
export function kubeconfigProxy(value: string, cluster: string): ProxySetting {
  const source = `proxy-url of cluster ${cluster} in the kubeconfig`;
  if (!URL.canParse(value) || !new URL(value).host) {
    throw new ProxyConfigError(`the ${source} is not a URL; set it to http://host:port, or remove it`);
  }
  return usable(new URL(value), source, false);
}

function usable(url: URL, source: string, fromEnv: boolean): ProxySetting {
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'socks5' || scheme === 'socks5h') {
    throw new ProxyConfigError(
      `${fromEnv ? source : `the ${source}`} names a socks5 proxy (${shownProxy(url)}), which ccm does not support; use an http:// or https:// proxy`,
    );
  }
  if (scheme !== 'http' && scheme !== 'https') {
    throw new ProxyConfigError(
      `${fromEnv ? source : `the ${source}`} names a ${scheme}:// proxy, which ccm does not support; use an http:// or https:// proxy`,
    );
  }
  return { url, shown: shownProxy(url), source, fromEnv };
}

/** The request's host and port as Go's canonicalAddr makes them: the scheme's port when none is given. */
function hostAndPort(target: URL): { host: string; port: string } {
  const host = target.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port =
    target.port || (target.protocol === 'https:' ? '443' : target.protocol === 'http:' ? '80' : '');
  return { host, port };
}

const family = (ip: string) => (isIP(ip) === 6 ? 'ipv6' : 'ipv4');

/** 127.0.0.0/8 and ::1; BlockList also matches their IPv4-mapped IPv6 forms (::ffff:127.0.0.1), as Go's IsLoopback does. */
let loopback: BlockList | undefined;
function isLoopback(ip: string): boolean {
  if (!loopback) {
    loopback = new BlockList();
    loopback.addSubnet('127.0.0.0', 8, 'ipv4');
    loopback.addAddress('::1', 'ipv6');
  }
  return loopback.check(ip, family(ip));
}

/** One NO_PROXY entry: does it keep a request to this host and port from the proxy? */
type Matcher = (host: string, port: string, ip: boolean) => boolean;

/**
 * Go's net.SplitHostPort: `host:port` or `[v6]:port`; undefined where there is no port to split off
 * (`corp.example`, `fd00::1`) or the brackets are wrong.
 */
function splitHostPort(entry: string): { host: string; port: string } | undefined {
  const colon = entry.lastIndexOf(':');
  if (colon < 0) return undefined;
  let host: string;
  if (entry.startsWith('[')) {
    const end = entry.indexOf(']');
    if (end < 0 || end + 1 !== colon) return undefined;
    host = entry.slice(1, end);
  } else {
    host = entry.slice(0, colon);
    if (host.includes(':')) return undefined;
  }
  if (/[[\]]/.test(host) || /[[\]]/.test(entry.slice(colon))) return undefined;
  return { host, port: entry.slice(colon + 1) };
}

function parseNoProxy(value: string): Matcher[] {
  const matchers: Matcher[] = [];
  for (const raw of value.split(',')) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return [() => true];
    // A CIDR: 10.0.0.0/8, fd00::/8 (the address may have host bits, as Go's ParseCIDR allows).
    const slash = entry.indexOf('/');
    if (slash > 0) {
      const address = entry.slice(0, slash);
      const bits = entry.slice(slash + 1);
      const max = isIP(address) === 4 ? 32 : isIP(address) === 6 ? 128 : 0;
      if (max > 0 && /^\d{1,3}$/.test(bits) && Number(bits) <= max) {
        const list = new BlockList();
        list.addSubnet(address, Number(bits), family(address));
        matchers.push((host, _port, ip) => ip && list.check(host, family(host)));
      }
      // Anything else with a slash is no host name either: skipped.
      continue;
    }
    const split = splitHostPort(entry);
    const name = split ? split.host : entry;
    const wantPort = split ? split.port : '';
    if (!name) continue;
    if (isIP(name)) {
      const list = new BlockList();
      list.addAddress(name, family(name));
      matchers.push(
        (host, port, ip) => ip && list.check(host, family(host)) && (wantPort === '' || wantPort === port),
      );
      continue;
    }
    // A domain: `corp.example` matches it and its subdomains, `.corp.example` and `*.corp.example`
    // only the subdomains. Compared in the ASCII form the URL parser gives the request's host.
    const subdomainsOnly = name.startsWith('.') || name.startsWith('*.');
    const bare = name.replace(/^\*?\./, '');
    const ascii = domainToASCII(bare) || bare;
    const suffix = `.${ascii}`;
    matchers.push(
      (host, port, ip) =>
        !ip &&
        (host.endsWith(suffix) || (!subdomainsOnly && host === ascii)) &&
        (wantPort === '' || wantPort === port),
    );
  }
  return matchers;
}

/**
 * Go's useProxy: false for localhost and loopback addresses, and for what a NO_PROXY entry matches.
 * Exported for the tests.
 */
export function useProxy(target: URL, noProxy: string): boolean {
  return usesProxy(parseNoProxy(noProxy))(target);
}

function usesProxy(matchers: Matcher[]): (target: URL) => boolean {
  return (target) => {
    const { host, port } = hostAndPort(target);
    if (host === 'localhost') return false;
    const ip = isIP(host) !== 0;
    if (ip && isLoopback(host)) return false;
    return !matchers.some((match) => match(host, port, ip));
  };
}

/**
 * The environment's proxy rule, read once (as Go reads it once per process): the proxy for each
 * request, or undefined to go direct. A variable that cannot be used throws ProxyConfigError when a
 * request would use it, not before.
 */
export function proxyFromEnvironment(env: Env): ProxyFor {
  const https = firstSet(env, 'HTTPS_PROXY', 'https_proxy');
  const http = firstSet(env, 'HTTP_PROXY', 'http_proxy');
  if (!https && !http) return () => undefined;
  const noProxy = firstSet(env, 'NO_PROXY', 'no_proxy');
  const proxied = usesProxy(parseNoProxy(noProxy?.value ?? ''));
  const cgi = Boolean(env.REQUEST_METHOD);
  const parsed = new Map<string, ProxySetting>();
  const proxyOf = (set: { name: string; value: string }) => {
    let proxy = parsed.get(set.name);
    if (!proxy) {
      proxy = parseEnvProxy(set.value, set.name);
      parsed.set(set.name, proxy);
    }
    return proxy;
  };
  return (target) => {
    let set: { name: string; value: string } | undefined;
    if (target.protocol === 'https:') set = https;
    else if (target.protocol === 'http:') {
      set = http;
      // Asked before NO_PROXY, as Go asks it: the variable itself is not to be trusted.
      if (set && cgi) {
        throw new ProxyConfigError(
          `refusing to use ${set.name} in a CGI environment (REQUEST_METHOD is set), where a request's Proxy header can set it; see golang.org/s/cgihttpproxy`,
        );
      }
    }
    if (!set || !proxied(target)) return undefined;
    return proxyOf(set);
  };
}

/**
 * Whether this Node tunnels through a proxy by itself (`proxyEnv` of http.Agent: Node 24.5, 22.21).
 * ccm runs on Node 24 (bin/run.js re-runs itself with it on an older Node); an older Node 22 would
 * ignore the option and go direct, so it is refused instead.
 */
function nodeTunnels(): boolean {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return major > 24 || (major === 24 && minor >= 5) || (major === 22 && minor >= 21);
}

/**
 * The http(s).Agent options that send its requests through `proxy`, or keep them off any proxy:
 * Node's own agent does the CONNECT (https) or the absolute-form request (http), with
 * Proxy-Authorization from the URL's user name and password, on that request alone.
 * `proxyEnv: {}` keeps an agent direct even where Node would otherwise give it the environment's
 * proxy (NODE_USE_ENV_PROXY=1): the rule above decides, not Node's.
 */
export function agentProxyOptions(
  proxy: ProxySetting | undefined,
  target: URL,
): { proxyEnv: Record<string, string> } {
  if (!proxy) return { proxyEnv: {} };
  if (!nodeTunnels()) {
    throw new ProxyConfigError(
      `${proxy.source} sends ${target.host} through ${proxy.shown}, but Node ${process.versions.node} cannot tunnel through a proxy; run ccm with Node 24`,
    );
  }
  return { proxyEnv: { [target.protocol === 'https:' ? 'HTTPS_PROXY' : 'HTTP_PROXY']: proxy.url.href } };
}

/** What to check after a failure at the proxy. */
function advice(proxy: ProxySetting, target: URL): string {
  return proxy.fromEnv
    ? `check ${proxy.source}, or list ${target.hostname} in NO_PROXY to go around the proxy`
    : `check the ${proxy.source}`;
}

/**
 * What a tunnel is asked for: host and port as the CONNECT line names them, the scheme's port too
 * (URL.host drops 443 for https:), as Go's and curl's messages name it and as a proxy's ACL or log
 * shows it.
 */
function tunnelTarget(target: URL): string {
  return `${target.hostname}:${target.port || (target.protocol === 'http:' ? '80' : '443')}`;
}

/**
 * The failure, told as the proxy's when it was: the proxy could not be reached (its address or its
 * name), or it would not open the tunnel (Node's ERR_PROXY_TUNNEL: a status other than 2xx, the
 * connection ended or timed out before the answer). Undefined for any other failure (the target's
 * TLS, its answer), which is the target's own.
 */
export function proxyFailure(
  err: unknown,
  proxy: ProxySetting | undefined,
  target: URL,
): ProxyError | undefined {
  if (!proxy || !(err instanceof Error)) return undefined;
  const e = err as Error & { code?: string; syscall?: string; statusCode?: number };
  const where = `${proxy.shown} (${proxy.source})`;
  if (e.code === 'ERR_PROXY_TUNNEL') {
    if (e.statusCode) {
      const status = `${e.statusCode} ${nodeHttp().STATUS_CODES[e.statusCode] ?? ''}`.trim();
      return new ProxyError(
        `the proxy ${where} refused to open a tunnel to ${tunnelTarget(target)} (${status}); ${advice(proxy, target)}`,
        e.statusCode === 407 || e.statusCode === 403,
      );
    }
    const what = /timed out/.test(e.message) ? 'did not answer' : 'closed the connection';
    return new ProxyError(
      `the proxy ${where} ${what} when asked for a tunnel to ${tunnelTarget(target)}; ${advice(proxy, target)}`,
      false,
    );
  }
  // Every connection of a proxied request is to the proxy: a failed connect or name lookup is the proxy's.
  if (e.syscall === 'connect' || e.syscall === 'getaddrinfo') {
    return new ProxyError(
      `cannot reach the proxy ${where} (${e.code ?? e.message}); ${advice(proxy, target)}`,
      e.code === 'ENOTFOUND',
    );
  }
  return undefined;
}
