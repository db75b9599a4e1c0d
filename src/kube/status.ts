/**
 * The API server answers an error in the encoding the request accepted. Writes accept protobuf (the
 * cheapest encoding for responses that are thrown away), so their errors — RBAC refusals, validation
 * failures, conflicts — arrive as a protobuf `metav1.Status` inside the `runtime.Unknown` envelope:
 *
 *   "k8s\0" + Unknown { 1: typeMeta, 2: raw (the Status), 3: contentEncoding, 4: contentType }
 *   Status { 1: metadata, 2: status, 3: message, 4: reason, 5: details, 6: code }
 *
 * Only the few fields needed for a one-line error are read; anything unexpected yields undefined.
 */

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

export interface DecodedStatus {
  message?: string;
  reason?: string;
  code?: number;
}

/** Length-delimited fields and varints of one message, by field number (the last one wins). */
function fields(buf: Buffer): Map<number, Buffer | number> | undefined {
  const out = new Map<number, Buffer | number>();
  let at = 0;
  const varint = (): number | undefined => {
    let value = 0;
    let shift = 0;
    while (at < buf.length && shift < 64) {
      const byte = buf[at++] as number;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
      shift += 7;
    }
    return undefined;
  };
  while (at < buf.length) {
    const key = varint();
    if (key === undefined) return undefined;
    const field = Math.floor(key / 8);
    switch (key % 8) {
      case 0: {
        const v = varint();
        if (v === undefined) return undefined;
        out.set(field, v);
        break;
      }
      case 1:
        at += 8;
        break;
      case 2: {
        const length = varint();
        if (length === undefined || at + length > buf.length) return undefined;
        out.set(field, buf.subarray(at, at + length));
        at += length;
        break;
      }
      case 5:
        at += 4;
        break;
      default:
        return undefined;
    }
  }
  return at === buf.length ? out : undefined;
}

/** The Status of a protobuf error body, or undefined when the body is not one. */
export function decodeProtobufStatus(body: Buffer): DecodedStatus | undefined {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const raw = fields(body.subarray(MAGIC.length))?.get(2);
  if (!Buffer.isBuffer(raw)) return undefined;
  const status = fields(raw);
  if (!status) return undefined;
  const text = (n: number) => {
    const v = status.get(n);
    return Buffer.isBuffer(v) ? v.toString('utf8') : undefined;
  };
  const code = status.get(6);
  return {
    ...(text(3) !== undefined ? { message: text(3) } : {}),
    ...(text(4) !== undefined ? { reason: text(4) } : {}),
    ...(typeof code === 'number' ? { code } : {}),
  };
}
