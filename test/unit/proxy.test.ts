/**
 * The proxy rule (src/proxy.ts) against the cases of Go's own tests of http.ProxyFromEnvironment
 * (golang.org/x/net/http/httpproxy/proxy_test.go: TestProxyForURL, TestUseProxy, TestAllNoProxy,
 * TestInvalidNoProxy, the FromEnvironment tests), restated here, plus what ccm refuses where Go goes on.
 */
import { describe, expect, it } from 'vitest';
import {
  agentProxyOptions,
  type Env,
  kubeconfigProxy,
  ProxyConfigError,
  proxyFailure,
  proxyFromEnvironment,
  useProxy,
} from '../../src/proxy.js';

/** The proxy a request to `target` goes through under `env`, as its URL, or 'direct'. */
function via(env: Env, target = 'http://example.com'): string {
  const proxy = proxyFromEnvironment(env)(new URL(target));
  return proxy ? proxy.url.href.replace(/\/$/, '') : 'direct';
}

describe('which variable, and its value', () => {
  it.each([
    // A value without a scheme is http://; host, host:port and addresses alike.
    [{ HTTP_PROXY: '127.0.0.1:8080' }, 'http://example.com', 'http://127.0.0.1:8080'],
    [
      { HTTP_PROXY: 'cache.corp.example.com:1234' },
      'http://example.com',
      'http://cache.corp.example.com:1234',
    ],
    [{ HTTP_PROXY: 'cache.corp.example.com' }, 'http://example.com', 'http://cache.corp.example.com'],
    [{ HTTP_PROXY: 'localhost' }, 'http://example.com', 'http://localhost'],
    [
      { HTTP_PROXY: 'https://cache.corp.example.com' },
      'http://example.com',
      'https://cache.corp.example.com',
    ],
    [{ HTTP_PROXY: 'http://127.0.0.1:8080' }, 'http://example.com', 'http://127.0.0.1:8080'],
    // http requests take HTTP_PROXY, https requests HTTPS_PROXY, and never the other one.
    [
      { HTTP_PROXY: 'http.proxy.tld', HTTPS_PROXY: 'secure.proxy.tld' },
      'http://insecure.tld/',
      'http://http.proxy.tld',
    ],
    [
      { HTTP_PROXY: 'http.proxy.tld', HTTPS_PROXY: 'secure.proxy.tld' },
      'https://secure.tld/',
      'http://secure.proxy.tld',
    ],
    [
      { HTTP_PROXY: 'http.proxy.tld', HTTPS_PROXY: 'https://secure.proxy.tld' },
      'https://secure.tld/',
      'https://secure.proxy.tld',
    ],
    [{ HTTP_PROXY: 'http.proxy.tld' }, 'https://secure.tld/', 'direct'],
    [{ HTTPS_PROXY: 'secure.proxy.tld' }, 'http://insecure.tld/', 'direct'],
    [{}, 'https://example.com', 'direct'],
    // Upper case is read first; an empty value is no value; lower case alone is read too.
    [{ HTTPS_PROXY: 'http://upper:1', https_proxy: 'http://lower:2' }, 'https://a.example', 'http://upper:1'],
    [{ HTTPS_PROXY: '', https_proxy: 'http://lower:2' }, 'https://a.example', 'http://lower:2'],
    [{ http_proxy: 'http://lower:3' }, 'http://a.example', 'http://lower:3'],
    [{ HTTPS_PROXY: 'http://p:1', NO_PROXY: '', no_proxy: 'a.example' }, 'https://a.example', 'direct'],
    [
      { HTTPS_PROXY: 'http://p:1', NO_PROXY: 'b.example', no_proxy: 'a.example' },
      'https://a.example',
      'http://p:1',
    ],
    // An HTTPS_PROXY is used in a CGI environment too (only HTTP_PROXY is refused there, below).
    [
      { HTTPS_PROXY: 'https://secure.proxy.tld', REQUEST_METHOD: 'GET' },
      'https://secure.tld/',
      'https://secure.proxy.tld',
    ],
  ] as [Env, string, string][])('%j, %s → %s', (env, target, want) => {
    expect(via(env, target)).toBe(want);
  });

  it('keeps the credentials in the URL for the agent, and shows the proxy without them', () => {
    const proxy = proxyFromEnvironment({ HTTPS_PROXY: 'http://us%40er:pa%3Ass@proxy.corp:3128' })(
      new URL('https://api.example'),
    );
    expect(proxy).toMatchObject({ shown: 'http://proxy.corp:3128', source: 'HTTPS_PROXY', fromEnv: true });
    expect(proxy?.url.username).toBe('us%40er');
    expect(agentProxyOptions(proxy, new URL('https://api.example'))).toEqual({
      proxyEnv: { HTTPS_PROXY: 'http://us%40er:pa%3Ass@proxy.corp:3128/' },
    });
    // Direct: an agent kept off any proxy Node would give it (NODE_USE_ENV_PROXY).
    expect(agentProxyOptions(undefined, new URL('https://api.example'))).toEqual({ proxyEnv: {} });
  });

  it('refuses HTTP_PROXY for http requests in a CGI environment, before NO_PROXY (loopback too)', () => {
    const env = { HTTP_PROXY: 'http://10.1.2.3:8080', REQUEST_METHOD: 'GET' };
    expect(() => via(env)).toThrow(
      /^refusing to use HTTP_PROXY in a CGI environment \(REQUEST_METHOD is set\)/,
    );
    expect(() => via({ ...env, NO_PROXY: '*' }, 'http://127.0.0.1')).toThrow(ProxyConfigError);
  });

  it('refuses, in one line naming the variable, what Go would skip or fail on later', () => {
    const line = (env: Env, target = 'https://a.example') => {
      try {
        return via(env, target);
      } catch (err) {
        expect(err).toBeInstanceOf(ProxyConfigError);
        return (err as Error).message;
      }
    };
    expect(line({ HTTPS_PROXY: 'socks5://127.0.0.1' })).toBe(
      'HTTPS_PROXY names a socks5 proxy (socks5://127.0.0.1), which ccm does not support; use an http:// or https:// proxy',
    );
    expect(line({ https_proxy: 'foo://host' })).toBe(
      'https_proxy names a foo:// proxy, which ccm does not support; use an http:// or https:// proxy',
    );
    expect(line({ HTTPS_PROXY: 'http://[::1' })).toBe(
      'HTTPS_PROXY is not a proxy URL; set it to http://host:port, or unset it',
    );
    // Only when a request would use it: NO_PROXY and loopback go direct without reading it.
    expect(line({ HTTPS_PROXY: 'socks5://127.0.0.1', NO_PROXY: 'a.example' })).toBe('direct');
    expect(line({ HTTPS_PROXY: 'socks5://127.0.0.1' }, 'https://127.0.0.1:6443')).toBe('direct');
  });
});

describe('NO_PROXY', () => {
  // Go's TestUseProxy list, one entry of each kind.
  const noProxy =
    'foobar.com, .barbaz.net, *.wildcard.io, 192.168.1.1, 192.168.1.2:81, 192.168.1.3:80, 10.0.0.0/30, 2001:db8::52:0:1, [2001:db8::52:0:2]:443, [2001:db8::52:0:3]:80, 2002:db8:a::45/64';
  it.each([
    // Never proxied: localhost and loopback addresses.
    ['localhost', false],
    ['127.0.0.1', false],
    ['127.0.0.2', false],
    ['[::1]', false],
    ['[::ffff:127.0.0.1]', false],
    ['[::2]', true],
    // Addresses, with and without a port, and CIDRs.
    ['192.168.1.1', false],
    ['192.168.1.2', true],
    ['192.168.1.3', false],
    ['192.168.1.4', true],
    ['10.0.0.2', false],
    ['10.0.0.4', true],
    ['[::ffff:10.0.0.2]', false],
    ['[2001:db8::52:0:1]', false],
    ['[2001:db8::52:0:2]', true],
    ['[2001:db8::52:0:3]', false],
    ['[2002:db8:a::123]', false],
    ['[fe80::424b:c8be:1643:a1b6]', true],
    // Domains: the name and its subdomains; with a leading dot or *. only the subdomains.
    ['barbaz.net', true],
    ['www.barbaz.net', false],
    ['foobar.com', false],
    ['www.foobar.com', false],
    ['FooBar.COM', false],
    ['foofoobar.com', true],
    ['baz.com', true],
    ['localhost.net', true],
    ['local.localhost', true],
    ['barbarbaz.net', true],
    ['wildcard.io', true],
    ['nested.wildcard.io', false],
    ['awildcard.io', true],
  ] as [string, boolean][])('http://%s:80 proxied: %s', (host, proxied) => {
    expect(useProxy(new URL(`http://${host}:80`), noProxy)).toBe(proxied);
    // `*`: nothing is proxied.
    expect(useProxy(new URL(`http://${host}:80`), noProxy.replace('foobar.com', '*'))).toBe(false);
  });

  it.each([
    // Ports: an entry with one matches that port only; the scheme's port when the URL has none.
    ['https://api.corp.example', 'corp.example:443', false],
    ['https://api.corp.example:6443', 'corp.example:443', true],
    ['https://10.0.0.5:6443', '10.0.0.5:6443', false],
    ['https://10.0.0.5', '10.0.0.5:6443', true],
    ['http://10.0.0.5', '10.0.0.5:80', false],
    // A domain never matches an address, nor an address a name.
    ['https://10.0.0.5', '0.0.5', true],
    ['https://kubernetes.default.svc', '10.96.0.1', true],
    ['https://kubernetes.default.svc', '.svc', false],
    ['https://10.96.0.1', '10.96.0.0/12', false],
    // Internationalised names, in either form.
    ['http://www.示例.com', '.示例.com', false],
    ['http://www.示例.com', 'xn--fsq092h.com', false],
    ['http://www.xn--fsq092h.com', '示例.com', false],
    // What cannot be read is skipped (Go's TestInvalidNoProxy), the rest still applies.
    ['http://example.com', ':1', true],
    ['http://example.com', ':1,,  , example.com', false],
    ['http://example.com', 'foo/bar, 10.0.0.0/33', true],
  ] as [string, string, boolean][])('%s with NO_PROXY=%s proxied: %s', (target, entries, proxied) => {
    expect(useProxy(new URL(target), entries)).toBe(proxied);
  });
});

describe("a kubeconfig's proxy-url", () => {
  it('is taken as http or https, socks5 refused in one line', () => {
    expect(kubeconfigProxy('http://u:p@proxy.corp:3128', 'prod')).toMatchObject({
      shown: 'http://proxy.corp:3128',
      source: 'proxy-url of cluster prod in the kubeconfig',
      fromEnv: false,
    });
    expect(() => kubeconfigProxy('socks5://127.0.0.1:1080', 'prod')).toThrow(
      'the proxy-url of cluster prod in the kubeconfig names a socks5 proxy (socks5://127.0.0.1:1080), which ccm does not support; use an http:// or https:// proxy',
    );
    expect(() => kubeconfigProxy('proxy.corp:3128', 'prod')).toThrow(
      'the proxy-url of cluster prod in the kubeconfig is not a URL; set it to http://host:port, or remove it',
    );
  });
});

describe('a failure at the proxy', () => {
  const proxy = proxyFromEnvironment({ HTTPS_PROXY: 'http://user:secret@proxy.corp:3128' })(
    new URL('https://api.example'),
  );
  const target = new URL('https://api.example');
  const tunnel = (statusCode?: number, message = 'Failed to establish tunnel') =>
    Object.assign(new Error(message), { code: 'ERR_PROXY_TUNNEL', ...(statusCode ? { statusCode } : {}) });

  it('names the proxy without its credentials, and the variable it came from', () => {
    const refused = proxyFailure(tunnel(407), proxy, target);
    expect(refused?.message).toBe(
      'the proxy http://proxy.corp:3128 (HTTPS_PROXY) refused to open a tunnel to api.example:443 (407 Proxy Authentication Required); check HTTPS_PROXY, or list api.example in NO_PROXY to go around the proxy',
    );
    expect(refused?.lasting).toBe(true);
    expect(proxyFailure(tunnel(403), proxy, target)?.lasting).toBe(true);
    expect(proxyFailure(tunnel(502), proxy, target)).toMatchObject({
      message: expect.stringContaining('(502 Bad Gateway)'),
      lasting: false,
    });
    const refusedConnection = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:3128'), {
      code: 'ECONNREFUSED',
      syscall: 'connect',
    });
    expect(proxyFailure(refusedConnection, proxy, target)?.message).toBe(
      'cannot reach the proxy http://proxy.corp:3128 (HTTPS_PROXY) (ECONNREFUSED); check HTTPS_PROXY, or list api.example in NO_PROXY to go around the proxy',
    );
    expect(
      proxyFailure(
        tunnel(undefined, 'Connection to establish proxy tunnel timed out after 30000ms'),
        proxy,
        target,
      )?.message,
    ).toMatch(
      /^the proxy http:\/\/proxy\.corp:3128 \(HTTPS_PROXY\) did not answer when asked for a tunnel to api\.example:443;/,
    );
    for (const err of [tunnel(407), refusedConnection]) {
      expect(proxyFailure(err, proxy, target)?.message).not.toMatch(/user|secret/);
    }
  });

  it("names the port the tunnel is asked for, the scheme's too (CONNECT host:port)", () => {
    expect(proxyFailure(tunnel(407), proxy, new URL('https://[fd00::1]/v1'))?.message).toContain(
      'a tunnel to [fd00::1]:443 (',
    );
    expect(proxyFailure(tunnel(407), proxy, new URL('https://api.example:6443/'))?.message).toContain(
      'a tunnel to api.example:6443 (',
    );
  });

  it("is not the proxy's when the target itself failed, or no proxy was used", () => {
    const tls = Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    expect(proxyFailure(tls, proxy, target)).toBeUndefined();
    expect(proxyFailure(tunnel(407), undefined, target)).toBeUndefined();
  });
});
