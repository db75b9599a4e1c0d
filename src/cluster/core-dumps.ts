/**
 * `cluster prepare` holds kubeconfig credentials as root, and a core dump of it (a crash, or a dump
 * asked for from outside) would write them to disk. Node has no setrlimit, so util-linux's prlimit
 * sets this process's RLIMIT_CORE to 0, soft and hard, so that nothing can raise it again.
 * Returns why it could not, or undefined.
 */
export async function disableCoreDumps(): Promise<string | undefined> {
  const { execa } = await import('execa');
  const result = await execa('prlimit', [`--pid=${process.pid}`, '--core=0:0'], {
    reject: false,
    stdin: 'ignore',
  });
  if (result.exitCode === 0) return undefined;
  const why = result.code === 'ENOENT' ? 'prlimit (util-linux) is not installed' : result.stderr.trim();
  return `core dumps of this process stay possible: ${why}`;
}
