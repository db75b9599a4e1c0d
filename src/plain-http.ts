/**
 * Plain http carries credentials (a bearer token, a client secret, a signed request) unencrypted, so
 * it is taken only to this machine: localhost, 127.0.0.0/8 or [::1] (a simulator, a local proxy).
 */
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** Whether this URL is https, or http to a loopback address. */
export function encryptedOrLocal(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.test(url.hostname));
}
