/** The part of sshpk-agent (which ships no types) that ccm uses, through src/ssh-agent.ts. */
declare module 'sshpk-agent' {
  export interface AgentKey {
    type: string;
    size: number;
    comment?: string;
    fingerprint(algo: 'md5' | 'sha256'): { toString(format?: 'hex' | 'base64'): string };
  }
  export interface AgentSignature {
    hashAlgorithm: string;
    toString(): string;
  }
  export class Client {
    constructor(options: { socketPath: string; timeout?: number });
    listKeys(cb: (err: Error | null, keys: AgentKey[]) => void): void;
    sign(key: AgentKey, data: Buffer, cb: (err: Error | null, sig: AgentSignature) => void): void;
    /** A socket it cannot reach is reported here, and the request waiting for it is never called back. */
    on(event: 'error', listener: (err: Error) => void): this;
  }
  const agent: { Client: typeof Client };
  export default agent;
}
