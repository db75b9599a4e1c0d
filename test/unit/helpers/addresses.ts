import type { NodeAddress } from '../../../src/providers/types.js';

// Expected NodeAddress lists, written one kind at a time in the order a provider returns them:
// `[...internalIPs('10.0.0.2', 'fd00::2'), ...externalIPs('203.0.113.2'), hostname('node-a')]`.

export const internalIPs = (...ips: string[]): NodeAddress[] =>
  ips.map((address) => ({ type: 'InternalIP', address }));

export const externalIPs = (...ips: string[]): NodeAddress[] =>
  ips.map((address) => ({ type: 'ExternalIP', address }));

export const hostname = (name: string): NodeAddress => ({ type: 'Hostname', address: name });

export const externalDNS = (name: string): NodeAddress => ({ type: 'ExternalDNS', address: name });
