/**
 * `ccm run`'s reload compares a Secret's values as the API server sent them: decoded as UTF-8, bytes
 * that are not UTF-8 all become U+FFFD, and a rotation of a binary value (a DER key, a PKCS#12 bundle)
 * would compare equal. An outside review's reproduction (RV-7).
 */
import { describe, expect, it } from 'vitest';
import { readSecret, sameValues } from '../../../src/kube/secrets.js';
import type { KubeTransport } from '../../../src/kube/transport.js';

const transportWith = (b64: string) =>
  ({
    request: async () => ({ metadata: { resourceVersion: '1' }, data: { key: b64 } }),
  }) as unknown as KubeTransport;

describe('binary Secret values', () => {
  it('RV-7: two different non-UTF-8 values are two different credentials', async () => {
    const before = await readSecret(
      transportWith(Buffer.from([0x30, 0x82, 0xff, 0x01]).toString('base64')),
      'ns',
      'n',
    );
    const after = await readSecret(
      transportWith(Buffer.from([0x30, 0x82, 0xfe, 0x01]).toString('base64')),
      'ns',
      'n',
    );
    expect(sameValues(after, before), 'the rotation compares equal').toBe(false);
    expect(sameValues(before, before)).toBe(true);
  });
});
