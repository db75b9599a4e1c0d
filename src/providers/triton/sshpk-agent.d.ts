/** The part of sshpk-agent (which ships no types) that the Triton signer uses. */
declare module 'sshpk-agent' {
  export interface AgentKey {
    type: string;
    size: number;
    fingerprint(algo: 'md5'): { toString(format: 'hex'): string };
  }
  export interface AgentSignature {
    hashAlgorithm: string;
    toString(): string;
  }
  export class Client {
    constructor(options: { socketPath: string; timeout?: number });
    listKeys(cb: (err: Error | null, keys: AgentKey[]) => void): void;
    sign(key: AgentKey, data: Buffer, cb: (err: Error | null, sig: AgentSignature) => void): void;
  }
  const agent: { Client: typeof Client };
  export default agent;
}
