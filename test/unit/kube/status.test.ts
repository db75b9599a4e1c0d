/** Decoding the API server's protobuf Status (issue 6, item 10). */
import { describe, expect, it } from 'vitest';
import { decodeProtobufStatus } from '../../../src/kube/status.js';
import { statusMessage } from '../../../src/kube/transport.js';

/** Protobuf wire encoding, written out by hand from the format (varint keys, length-delimited fields). */
function varint(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}
const bytesField = (field: number, data: Buffer) =>
  Buffer.from([...varint(field * 8 + 2), ...varint(data.length), ...data]);
const intField = (field: number, value: number) => Buffer.from([...varint(field * 8), ...varint(value)]);

const MESSAGE =
  'nodes "gone" is forbidden: User "system:serviceaccount:ccm:ccm" cannot delete resource "nodes" in API group "" at the cluster scope';

function envelope(status: Buffer): Buffer {
  const typeMeta = Buffer.concat([bytesField(1, Buffer.from('v1')), bytesField(2, Buffer.from('Status'))]);
  return Buffer.concat([
    Buffer.from('k8s\0', 'latin1'),
    bytesField(1, typeMeta),
    bytesField(2, status),
    bytesField(4, Buffer.from('')),
  ]);
}

const status = Buffer.concat([
  bytesField(1, Buffer.alloc(0)),
  bytesField(2, Buffer.from('Failure')),
  bytesField(3, Buffer.from(MESSAGE)),
  bytesField(4, Buffer.from('Forbidden')),
  bytesField(5, bytesField(1, Buffer.from('gone'))),
  intField(6, 403),
]);

describe('decodeProtobufStatus', () => {
  it("reads message, reason and code of the server's Status", () => {
    expect(decodeProtobufStatus(envelope(status))).toEqual({
      message: MESSAGE,
      reason: 'Forbidden',
      code: 403,
    });
  });

  it('is undefined for anything else: JSON, a truncated body, no magic', () => {
    expect(decodeProtobufStatus(Buffer.from('{"message":"x"}'))).toBeUndefined();
    expect(decodeProtobufStatus(envelope(status).subarray(0, 30))).toBeUndefined();
    expect(decodeProtobufStatus(Buffer.from([0x6b, 0x38, 0x73, 0x00, 0xff]))).toBeUndefined();
    expect(decodeProtobufStatus(Buffer.alloc(0))).toBeUndefined();
  });
});

describe('statusMessage', () => {
  it('gives the reason of a protobuf error, not just the HTTP status', () => {
    expect(statusMessage(envelope(status), 403)).toBe(MESSAGE);
  });

  it('still reads JSON errors, and falls back to the HTTP status', () => {
    expect(statusMessage(Buffer.from(JSON.stringify({ message: 'line one\nline two' })), 422)).toBe(
      'line one',
    );
    expect(statusMessage(Buffer.from('<html>proxy</html>'), 502)).toBe('HTTP 502 Bad Gateway');
  });
});
