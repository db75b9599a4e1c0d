import { createConnection } from 'node:net';
import type sshpk from 'sshpk';

/**
 * An ssh-agent client for the two requests ccm makes: list the keys, sign with one. The protocol is
 * OpenSSH's (PROTOCOL.agent; the IETF draft-miller-ssh-agent, sections 4.4 and 4.5): each message is a
 * uint32 length and a payload whose first byte is its type; strings are a uint32 length and bytes.
 * Keys and signatures are parsed by sshpk. One connection per request, each bounded by `timeoutMs`, so
 * a stale SSH_AUTH_SOCK or an agent that goes away is a rejected promise, never a hang or a crash.
 */
export interface SshAgent {
  listKeys(): Promise<sshpk.Key[]>;
  sign(key: sshpk.Key, data: Buffer): Promise<sshpk.Signature>;
}

const FAILURE = 5;
const REQUEST_IDENTITIES = 11;
const IDENTITIES_ANSWER = 12;
const SIGN_REQUEST = 13;
const SIGN_RESPONSE = 14;
/** Sign-request flag: an RSA key signs with rsa-sha2-256, not SHA-1. */
const RSA_SHA2_256 = 2;
/** An answer longer than this is no agent's: a list of keys is a few KiB. */
const MAX_ANSWER = 1024 * 1024;

const uint32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const string = (bytes: Buffer) => Buffer.concat([uint32(bytes.length), bytes]);

/** Reads the strings and integers of one answer in order; a short answer throws. */
class Reader {
  private at = 0;
  constructor(private readonly buf: Buffer) {}
  byte(): number {
    return this.take(1)[0] as number;
  }
  uint32(): number {
    return this.take(4).readUInt32BE();
  }
  string(): Buffer {
    return this.take(this.uint32());
  }
  private take(n: number): Buffer {
    if (this.at + n > this.buf.length) throw new Error('the answer ends early');
    const part = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return part;
  }
}

export async function connectAgent(socketPath: string, timeoutMs = 5000): Promise<SshAgent> {
  const { default: sshpkLib } = await import('sshpk');

  const request = (payload: Buffer) =>
    new Promise<Reader>((resolve, reject) => {
      const socket = createConnection(socketPath);
      const chunks: Buffer[] = [];
      let received = 0;
      const timer = setTimeout(() => finish(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
      let done = false;
      const finish = (err?: Error, answer?: Buffer) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        socket.destroy();
        if (err) reject(err);
        else resolve(new Reader(answer as Buffer));
      };
      socket.on('connect', () => socket.write(string(payload)));
      socket.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        received += chunk.length;
        const all = Buffer.concat(chunks);
        if (all.length < 4) return;
        const length = all.readUInt32BE();
        if (length > MAX_ANSWER) return finish(new Error(`an answer of ${length} bytes`));
        if (received >= 4 + length) finish(undefined, all.subarray(4, 4 + length));
      });
      socket.on('error', (err) => finish(err));
      socket.on('close', () => finish(new Error('the agent closed the connection without an answer')));
    });

  const expect = (answer: Reader, type: number, what: string) => {
    const got = answer.byte();
    if (got === FAILURE)
      throw new Error(`the agent refused to ${what} (key not found, or confirmation refused)`);
    if (got !== type) throw new Error(`the agent answered message type ${got} to a request to ${what}`);
  };

  return {
    async listKeys() {
      const answer = await request(Buffer.from([REQUEST_IDENTITIES]));
      expect(answer, IDENTITIES_ANSWER, 'list its keys');
      const keys: sshpk.Key[] = [];
      for (let n = answer.uint32(); n > 0; n--) {
        const blob = answer.string();
        const comment = answer.string().toString('utf8');
        try {
          const key = sshpkLib.parseKey(blob, 'rfc4253');
          key.comment = comment;
          keys.push(key);
        } catch {
          // A key type sshpk does not read (a certificate, a hardware key's type): not one ccm can use.
        }
      }
      return keys;
    },

    async sign(key, data) {
      const flags = key.type === 'rsa' ? RSA_SHA2_256 : 0;
      const answer = await request(
        Buffer.concat([
          Buffer.from([SIGN_REQUEST]),
          string(key.toBuffer('rfc4253')),
          string(data),
          uint32(flags),
        ]),
      );
      expect(answer, SIGN_RESPONSE, 'sign');
      const signature = sshpkLib.parseSignature(answer.string(), key.type as sshpk.AlgorithmType, 'ssh');
      signature.hashAlgorithm ??= implicitHash(key);
      return signature;
    },
  };
}

/**
 * The hash of a signature format that names none, as OpenSSH uses it: ECDSA's is the curve's (RFC 5656
 * section 6.2.1), ssh-dss and plain ssh-rsa SHA-1, Ed25519 SHA-512.
 */
function implicitHash(key: sshpk.Key): sshpk.AlgorithmHashType {
  if (key.type === 'ecdsa') return key.size <= 256 ? 'sha256' : key.size <= 384 ? 'sha384' : 'sha512';
  if (key.type === 'ed25519') return 'sha512';
  return 'sha1';
}
