import type { Terminal } from '../../../src/cli/output/render.js';

/** Output to a pipe or a file: no terminal, no width or height limit, no colour. */
export const pipe: Terminal = {
  tty: false,
  width: Number.POSITIVE_INFINITY,
  height: Number.POSITIVE_INFINITY,
  colour: 0,
};
