import { InvalidConfigError } from '../errors.js';

/**
 * Service annotations the Triton provider reads, each with a typed parser and a description (the
 * annotation reference in docs/reference/annotations.md is generated from these).
 */
export interface AnnotationSpec<T> {
  key: string;
  description: string;
  accepted: string;
  parse(annotations: Readonly<Record<string, string>>, fallback: T): T;
}

/** CNS's dns-label grammar (triton-cns docs/metadata.md): [a-z][a-z0-9-]*, at most 63 characters. */
const DNS_LABEL = /^[a-z][a-z0-9-]{0,62}$/;

export const CNS_SERVICE_NAME: AnnotationSpec<string> = {
  key: 'triton.ccm.io/cns-service-name',
  description:
    'CNS service name: the first label of the ingress host name <name>.svc.<account uuid>.<dc>.<suffix>. Services that give the same name share one CNS service. Default: the load balancer name ("a" + the Service UID).',
  accepted: 'a DNS label: a lowercase letter, then lowercase letters, digits or "-", at most 63 characters',
  parse(annotations, fallback) {
    const value = annotations[this.key];
    if (value === undefined) return fallback;
    if (!DNS_LABEL.test(value)) {
      throw new InvalidConfigError(`annotation ${this.key}="${value}" is not valid; use ${this.accepted}`);
    }
    return value;
  },
};

export type SrvPort = 'node-port' | 'service-port';

export const CNS_SRV_PORT: AnnotationSpec<SrvPort> = {
  key: 'triton.ccm.io/cns-srv-port',
  description:
    'Which port each `<name>:<port>` entry (and so each CNS SRV record) carries: the node port kube-proxy opens on every backend machine, or the Service port, for workloads that listen on the machine itself (hostNetwork / hostPort).',
  accepted: '"node-port" (default) or "service-port"',
  parse(annotations, fallback) {
    const value = annotations[this.key];
    if (value === undefined) return fallback;
    if (value !== 'node-port' && value !== 'service-port') {
      throw new InvalidConfigError(`annotation ${this.key}="${value}" is not valid; use ${this.accepted}`);
    }
    return value;
  },
};

export const ANNOTATIONS = [CNS_SERVICE_NAME, CNS_SRV_PORT] as const;
