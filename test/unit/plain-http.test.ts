/** Where plain http may go or be served: this machine only. */
import { describe, expect, it } from 'vitest';
import { isLoopbackAddress } from '../../src/plain-http.js';

describe('isLoopbackAddress (--plain-http --bind-address)', () => {
  it.each([
    '127.0.0.1',
    '127.0.0.2',
    '127.255.255.254',
    '::1',
    '0:0:0:0:0:0:0:1',
    '0::1',
    '::ffff:127.0.0.1',
    'localhost',
    'LOCALHOST',
  ])('%s is loopback', (address) => {
    expect(isLoopbackAddress(address)).toBe(true);
  });

  it.each([
    '0.0.0.0',
    '::',
    '0:0:0:0:0:0:0:0',
    '',
    '10.0.0.1',
    '203.0.113.7',
    '128.0.0.1',
    '127.0.0.256',
    '127.0.0',
    '1270.0.0.1',
    '127.0.0.1.example.com',
    '::2',
    '::ffff:10.0.0.1',
    '::ffff:0.0.0.0',
    'fe80::1%lo',
    '[::1]',
    'example.com',
    'localhost.example.com',
    // The URL parser reads it as the host [::1]; it is no address to bind to.
    '::1]/x[',
    '::1]:80',
  ])('%s is not', (address) => {
    expect(isLoopbackAddress(address)).toBe(false);
  });
});

describe('serve with plain http', () => {
  it('listens only where the address it got is loopback: localhost trusted by name is checked once bound', async () => {
    const { Registry } = await import('prom-client');
    const { serve } = await import('../../src/controllers/server.js');
    const options = { port: 0, plain: true, healthz: [], readyz: [], registry: new Registry() };
    const local = await serve({ ...options, bindAddress: 'localhost' });
    expect(local.url).toMatch(/^http:\/\/(127\.0\.0\.1|\[::1\]):\d+$/);
    await local.close();
    await expect(serve({ ...options, bindAddress: '0.0.0.0' })).rejects.toThrow(/not a loopback address/);
  });
});
