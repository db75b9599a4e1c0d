/** Replaced by the commit's text in the bundle (build/bundle.mjs, build/commit.mjs); absent in tsc's dist/. */
declare const __CCM_COMMIT__: string | undefined;

/**
 * The commit this ccm was built from: its hash, `-dirty` when the work tree had changes, or 'unknown'
 * (built without git, from a source tarball, or run from tsc's output rather than the bundle).
 */
export const buildCommit: string =
  typeof __CCM_COMMIT__ === 'string' && __CCM_COMMIT__ !== '' ? __CCM_COMMIT__ : 'unknown';
