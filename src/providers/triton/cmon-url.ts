/**
 * CMON's URL as an operator writes it (--cmon-url, TRITON_CMON_URL) or CloudAPI's ListServices names
 * it: its port as written. Without imports: `ccm manifests --cmon` reads it as well as the provider.
 *
 * WHATWG URL drops a scheme's default port: `new URL('https://cmon.example.net:443').port` is '', the
 * same as for no port at all, and CMON's own port (9163) would take its place. A CMON behind a proxy or
 * a tunnel on 443 could then not be named. So the port is read from the authority as written.
 */

/** CMON's port (triton-cmon docs/README.md: https://cmon.<az>.triton.zone:9163; Prometheus' default). */
export const CMON_PORT = 9163;

/**
 * The port written in the URL's authority (`scheme://[userinfo@]host[:port]`), as its digits;
 * undefined when none is written (or an empty one, `https://name:/`, which WHATWG reads as none).
 */
export function writtenPort(text: string): string | undefined {
  const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#\\]*)/.exec(text.trim())?.[1];
  if (authority === undefined) return undefined;
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const port = /^(?:\[[^\]]*\]|[^:]*):(\d+)$/.exec(hostPort)?.[1];
  return port === undefined ? undefined : port;
}

/**
 * The port to connect to: the one written, else CMON's. Port 0 names no port (a connection to it
 * fails, and Prometheus would print `port: 0`): the reason why, for the caller's one-line error.
 */
export function cmonPort(text: string): { port: number } | { error: string } {
  const written = writtenPort(text);
  if (written === undefined) return { port: CMON_PORT };
  const port = Number(written);
  if (port === 0)
    return {
      error: `port 0 is no port; leave it out for CMON's own (${CMON_PORT}), or give the port of the proxy or tunnel before CMON`,
    };
  return { port };
}
