import type { AgentKey, AgentSignature } from 'sshpk-agent';

/**
 * An ssh-agent, through sshpk-agent, whose failures are rejected promises. sshpk-agent reports a
 * socket it cannot reach (a stale SSH_AUTH_SOCK, an agent that went away) as an 'error' event on the
 * client and never calls the waiting request back: unhandled, that event ends the process; ignored,
 * the request hangs. Here both become the request's error, and no request waits past `timeoutMs`.
 */
export interface SshAgent {
  listKeys(): Promise<AgentKey[]>;
  sign(key: AgentKey, data: Buffer): Promise<AgentSignature>;
}

export async function connectAgent(socketPath: string, timeoutMs = 5000): Promise<SshAgent> {
  const { Client } = (await import('sshpk-agent')).default;
  const client = new Client({ socketPath, timeout: timeoutMs });
  const waiting = new Set<(err: Error) => void>();
  client.on('error', (err) => {
    for (const fail of [...waiting]) fail(err);
  });
  const call = <T>(start: (done: (err: Error | null, value: T) => void) => void) =>
    new Promise<T>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        waiting.delete(fail);
      };
      const fail = (err: Error) => {
        settle();
        reject(err);
      };
      const timer = setTimeout(() => fail(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
      waiting.add(fail);
      start((err, value) => {
        settle();
        if (err) reject(err);
        else resolve(value);
      });
    });
  return {
    listKeys: () => call<AgentKey[]>((done) => client.listKeys(done)),
    sign: (key, data) => call<AgentSignature>((done) => client.sign(key, data, done)),
  };
}
