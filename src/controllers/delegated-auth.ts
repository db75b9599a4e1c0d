/**
 * Who may read /metrics (and any other path not always allowed): the API server decides, as for the
 * Kubernetes components (k8s.io/apiserver pkg/server/options authentication.go and authorization.go,
 * "delegated" authentication and authorisation):
 *
 * - the bearer token is checked with a TokenReview, the user it names with a SubjectAccessReview on the
 *   non-resource URL (`get /metrics`); each answer is kept 10 s, as upstream's cache TTLs;
 * - paths of `--authorization-always-allow-paths` (upstream's default /healthz, /readyz, /livez; a
 *   trailing `*` matches a prefix) need neither, so kubelet probes work without a token;
 * - members of system:masters are allowed without asking (upstream's AlwaysAllowGroups).
 * A request without a token is 401, a refused one 403. Client certificates are not accepted.
 */
import type { KubeTransport } from '../kube/transport.js';
import { nodeCrypto } from '../node-modules.js';

export const DEFAULT_ALWAYS_ALLOW_PATHS = ['/healthz', '/readyz', '/livez'];
const ALWAYS_ALLOW_GROUPS = ['system:masters'];
const CACHE_TTL_MS = 10_000;
/** Answers kept at most: random tokens must not grow the heap. */
const CACHE_ENTRIES = 1024;
const REVIEW_TIMEOUT_MS = 10_000;

export type Decision = { allowed: true } | { allowed: false; status: 401 | 403; reason: string };

interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface DelegatedAuthOptions {
  transport: KubeTransport;
  alwaysAllowPaths?: readonly string[];
  now?: () => number;
}

export type Authorize = (path: string, authorization: string | undefined) => Promise<Decision>;

export function delegatedAuth(options: DelegatedAuthOptions): Authorize {
  const now = options.now ?? Date.now;
  const allowPath = pathMatcher(options.alwaysAllowPaths ?? DEFAULT_ALWAYS_ALLOW_PATHS);
  const users = new TtlCache<{ user?: UserInfo }>(now);
  const access = new TtlCache<boolean>(now);

  const authenticate = async (token: string): Promise<UserInfo | undefined> => {
    // Keyed by the token's hash, as upstream's token cache: the tokens themselves are not kept.
    const key = nodeCrypto().createHash('sha256').update(token).digest('base64');
    const cached = users.get(key);
    if (cached) return cached.user;
    const review = await options.transport.request<{
      status?: { authenticated?: boolean; user?: UserInfo };
    }>({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      ungated: true,
      timeoutMs: REVIEW_TIMEOUT_MS,
    });
    const user = review.status?.authenticated ? review.status.user : undefined;
    return users.set(key, user ? { user } : {}).user;
  };

  const authorize = async (user: UserInfo, path: string): Promise<boolean> => {
    const key = JSON.stringify([user.username, user.uid, user.groups, user.extra, path]);
    const cached = access.get(key);
    if (cached !== undefined) return cached;
    return access.set(
      key,
      await options.transport
        .request<{ status?: { allowed?: boolean } }>({
          method: 'POST',
          path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: user.username,
              ...(user.uid ? { uid: user.uid } : {}),
              ...(user.groups ? { groups: user.groups } : {}),
              ...(user.extra ? { extra: user.extra } : {}),
              nonResourceAttributes: { path, verb: 'get' },
            },
          },
          ungated: true,
          timeoutMs: REVIEW_TIMEOUT_MS,
        })
        .then((review) => review.status?.allowed === true),
    );
  };

  return async (path, authorization) => {
    if (allowPath(path)) return { allowed: true };
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (!token) return { allowed: false, status: 401, reason: 'a bearer token is required' };
    const user = await authenticate(token);
    if (!user) return { allowed: false, status: 401, reason: 'the token was not accepted' };
    if (user.groups?.some((g) => ALWAYS_ALLOW_GROUPS.includes(g))) return { allowed: true };
    if (await authorize(user, path)) return { allowed: true };
    return { allowed: false, status: 403, reason: `${user.username} may not get ${path}` };
  };
}

/** Plain paths, or a prefix ending in `*`; a leading `/` is optional (upstream's path authorizer). */
function pathMatcher(paths: readonly string[]): (path: string) => boolean {
  const norm = (p: string) => (p.startsWith('/') ? p : `/${p}`);
  const exact = new Set(paths.filter((p) => !p.endsWith('*')).map(norm));
  const prefixes = paths.filter((p) => p.endsWith('*')).map((p) => norm(p.slice(0, -1)));
  return (path) => exact.has(path) || prefixes.some((p) => path.startsWith(p));
}

class TtlCache<T> {
  private readonly entries = new Map<string, { value: T; until: number }>();
  constructor(private readonly now: () => number) {}

  get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until > this.now()) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  /** Keeps the value 10 s and returns it; the oldest entry goes when the cache is full. */
  set(key: string, value: T): T {
    this.entries.delete(key);
    if (this.entries.size >= CACHE_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { value, until: this.now() + CACHE_TTL_MS });
    return value;
  }
}
