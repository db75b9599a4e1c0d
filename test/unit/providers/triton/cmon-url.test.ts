import { describe, expect, it } from 'vitest';
import { CMON_PORT, cmonPort, writtenPort } from '../../../../src/providers/triton/cmon-url.js';

describe("CMON URL's port as written (review 46, finding 6)", () => {
  it.each([
    ['https://cmon.example.net:443', '443'],
    ['https://cmon.example.net:443/', '443'],
    ['https://user:pw@cmon.example.net:443', '443'],
    ['https://[::1]:443', '443'],
    ['https://127.0.0.1:8443', '8443'],
    ['https://cmon.example.net', undefined],
    ['https://[::1]', undefined],
    ['https://cmon.example.net:', undefined],
    ['https://cmon.example.net:0', '0'],
  ])('%s: %s', (text, port) => expect(writtenPort(text)).toBe(port));

  it("443 stays 443, where WHATWG URL's port is empty; none is CMON's 9163; 0 is refused", () => {
    expect(new URL('https://cmon.example.net:443').port).toBe('');
    expect(cmonPort('https://cmon.example.net:443')).toEqual({ port: 443 });
    expect(cmonPort('https://cmon.example.net')).toEqual({ port: CMON_PORT });
    expect(cmonPort('https://cmon.example.net:0')).toEqual({
      error: expect.stringContaining('port 0 is no port'),
    });
  });
});
