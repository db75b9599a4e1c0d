// The commit a build is made from, for `ccm version` (build/bundle.mjs puts it into the bundle as
// __CCM_COMMIT__). Never fails a build: without git, or where `root` is not the top of a git work tree (a
// source tarball, even one unpacked inside another repository), it is 'unknown'.
import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';

/**
 * HEAD of the work tree at `root`, with `-dirty` when `git status` shows a change (a file not ignored
 * that is new or differs from HEAD), as Kubernetes' own builds mark their gitTreeState; else 'unknown'.
 */
export function buildCommit(root) {
  // git finds the repository from `root` alone, not from a GIT_DIR a hook or a caller left set.
  const env = { ...process.env, GIT_OPTIONAL_LOCKS: '0' };
  for (const name of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_CEILING_DIRECTORIES'])
    delete env[name];
  const git = (...args) =>
    execFileSync('git', ['-C', root, ...args], {
      encoding: 'utf8',
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  let head;
  try {
    if (realpathSync(git('rev-parse', '--show-toplevel')) !== realpathSync(root)) return 'unknown';
    head = git('rev-parse', '--verify', 'HEAD^{commit}');
  } catch {
    return 'unknown';
  }
  if (!/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(head)) return 'unknown';
  try {
    return git('status', '--porcelain') === '' ? head : `${head}-dirty`;
  } catch {
    return head;
  }
}
