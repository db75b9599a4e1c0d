/**
 * Plain http carries credentials (a bearer token, a client secret, a signed request) unencrypted, so
 * it is taken only to this machine: localhost, 127.0.0.0/8 or [::1] (a simulator, a local proxy).
 */
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** Whether this URL is https, or http to a loopback address. */
export function encryptedOrLocal(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.test(url.hostname));
}

/**
 * Whether a server bound to this address is reachable from this machine alone: 127.0.0.0/8, ::1 in
 * any spelling (or ::ffff:127.x.x.x), or localhost. 0.0.0.0 and :: are every interface.
 */
export function isLoopbackAddress(address: string): boolean {
  if (/^localhost$/i.test(address)) return true;
  if (/^127(\.\d{1,3}){3}$/.test(address)) return address.split('.').every((octet) => Number(octet) <= 255);
  // An IPv6 address is hex digits, colons and (for ::ffff:127.0.0.1) dots: anything else (`::1]/x[`,
  // which the URL parser below would read as the host [::1]) is no address to bind to.
  if (!address.includes(':') || !/^[0-9a-f:.]+$/i.test(address)) return false;
  try {
    // The URL parser writes an IPv6 address in its one canonical form (0:0::1 → ::1, ::ffff:127.0.0.1 →
    // ::ffff:7f00:1), and refuses what is not one.
    const host = new URL(`http://[${address}]/`).hostname;
    return host === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host);
  } catch {
    return false;
  }
}
