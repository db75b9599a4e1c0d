import * as Flags from '@oclif/core/flags';
import {
  type BrakeOptions,
  DEFAULT_BRAKE_OPTIONS,
  DEFAULT_MAX_DELETION_RATIO,
  DEFAULT_NODE_DELETION_RATE,
  MAX_NODE_DELETION_RATE,
  MIN_NODE_DELETION_RATE,
} from '../controllers/deletion-brake.js';
import { expectedText } from './errors.js';

/**
 * A number flag, refused outside its range with the one wording every flag uses. Digits only (no
 * exponent), and finite: 400 digits are Infinity to Number(), and a rate of Infinity made NaN of
 * every later wait.
 */
function numberFlag(options: {
  description: string;
  default: number;
  accepts: (value: number) => boolean;
  expected: string;
}) {
  return Flags.custom<number>({
    description: options.description,
    default: options.default,
    parse: async (input) => {
      const value = /^\s*\d*\.?\d+\s*$/.test(input) ? Number(input) : Number.NaN;
      if (!Number.isFinite(value) || !options.accepts(value))
        throw new Error(expectedText(options.expected, input));
      return value;
    },
  })();
}

/** The deletion brake's flags, the same on `ccm run` and `ccm nodes init` (docs/nodes.md, The deletion brake). */
export const brakeFlags = {
  'max-deletion-ratio': numberFlag({
    description: `Hold every deletion when more than this share of the Nodes lost their instances at once, counting the Nodes deleted in the last 10 minutes (kube-controller-manager's --unhealthy-zone-threshold, ${DEFAULT_MAX_DELETION_RATIO}); a single Node is never held`,
    default: DEFAULT_MAX_DELETION_RATIO,
    accepts: (v) => v > 0 && v < 1,
    expected: 'a number between 0 and 1 such as 0.55',
  }),
  'node-deletion-rate': numberFlag({
    description: `Nodes deleted a second once 3 were deleted back to back (kube-controller-manager's --node-eviction-rate, ${DEFAULT_NODE_DELETION_RATE})`,
    default: DEFAULT_NODE_DELETION_RATE,
    accepts: (v) => v >= MIN_NODE_DELETION_RATE && v <= MAX_NODE_DELETION_RATE,
    expected: `a number from ${MIN_NODE_DELETION_RATE} to ${MAX_NODE_DELETION_RATE} (Nodes a second) such as 0.1`,
  }),
};

export function brakeOptionsFrom(flags: {
  'max-deletion-ratio': number;
  'node-deletion-rate': number;
}): BrakeOptions {
  return {
    ...DEFAULT_BRAKE_OPTIONS,
    maxRatio: flags['max-deletion-ratio'],
    rate: flags['node-deletion-rate'],
  };
}
