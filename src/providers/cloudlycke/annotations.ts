/**
 * The Service annotations Cloudlycke reads and writes. Each has a description, from which the
 * annotation reference (docs/reference/annotations.md) is generated (`npm run readme`).
 */
export interface AnnotationSpec {
  key: string;
  description: string;
  /** Set by ccm itself; a person never edits it. */
  managed?: boolean;
}

export const ANNOTATION_LOAD_BALANCER_IP = {
  key: 'cloudlycke.ccm.io/load-balancer-ip',
  description:
    'Ask for this address of the pool (same as spec.loadBalancerIP, which wins when both are set). An address outside the pool, or one another Service holds, fails the sync with a Warning Event.',
} as const satisfies AnnotationSpec;

export const ANNOTATION_ALLOCATION = {
  key: 'cloudlycke.ccm.io/allocation',
  description:
    'Where ccm records the address it gave the Service, with the Service UID and the cluster identity (JSON). On start and after a leader change the allocations are rebuilt from these records, so every Service keeps its address.',
  managed: true,
} as const satisfies AnnotationSpec;

export const annotations: readonly AnnotationSpec[] = [ANNOTATION_LOAD_BALANCER_IP, ANNOTATION_ALLOCATION];

export interface AllocationRecord {
  ip: string;
  uid: string;
  cluster: string;
}

/** The record on a Service, or undefined when it is absent or not one of ours. */
export function parseAllocation(value: string | undefined): AllocationRecord | undefined {
  if (!value) return undefined;
  try {
    const parsed = JSON.parse(value) as Partial<AllocationRecord>;
    if (
      typeof parsed.ip === 'string' &&
      typeof parsed.uid === 'string' &&
      typeof parsed.cluster === 'string'
    ) {
      return { ip: parsed.ip, uid: parsed.uid, cluster: parsed.cluster };
    }
  } catch {
    // not a record of ours
  }
  return undefined;
}

export function formatAllocation(record: AllocationRecord): string {
  return JSON.stringify({ ip: record.ip, uid: record.uid, cluster: record.cluster });
}
