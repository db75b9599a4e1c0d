import { KubeApiError } from './errors.js';
import { type KubeTransport, MAX_FULL_LIST_BYTES } from './transport.js';

export interface ListAllOptions {
  /** Items a page (the `limit`). */
  pageSize: number;
  /** Query parameters besides `limit` and `continue` (selectors), already encoded. */
  query?: string[];
  signal?: AbortSignal;
  timeoutMs?: number;
  /** The list starts over as one full list: drop what the earlier pages gave. */
  onRestart?: () => void;
}

/**
 * Every page of a list (client-go's tools/pager), each item handed to `onItem` as it streams in;
 * returns the list's resourceVersion. When the `continue` token expires before the last page (410:
 * etcd compacted past the revision the list started at, on a slow reader or a big cluster), the list
 * is read again as one unpaginated request, as the pager's FullListIfExpired does, instead of failing:
 * a fresh paginated list could expire the same way.
 */
export async function listAll(
  transport: KubeTransport,
  path: string,
  onItem: (item: unknown) => void,
  options: ListAllOptions,
): Promise<string> {
  const { signal, timeoutMs } = options;
  const url = (extra: string[]) => {
    const query = [...(options.query ?? []), ...extra];
    return query.length > 0 ? `${path}?${query.join('&')}` : path;
  };
  let cont = '';
  let rv = '';
  do {
    const extra = [`limit=${options.pageSize}`, ...(cont ? [`continue=${encodeURIComponent(cont)}`] : [])];
    let page: Awaited<ReturnType<KubeTransport['listPage']>>;
    try {
      page = await transport.listPage(url(extra), onItem, { signal, timeoutMs });
    } catch (err) {
      if (!(cont && err instanceof KubeApiError && err.status === 410)) throw err;
      options.onRestart?.();
      return (await transport.listPage(url([]), onItem, { signal, timeoutMs, maxBytes: MAX_FULL_LIST_BYTES }))
        .resourceVersion;
    }
    cont = page.continue;
    rv = page.resourceVersion || rv;
  } while (cont);
  return rv;
}
