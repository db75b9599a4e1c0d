/** Runs the built CLI (dist/, made by `npm run build`, which `npm test` runs first) as a user would. */
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** `timeoutMs` (default 2 minutes): a benchmark of thousands of Nodes on a loaded machine wants more. */
export async function ccm(
  args: string[],
  env: Record<string, string | undefined> = {},
  timeoutMs = 120_000,
): Promise<CliResult> {
  const result = await execa(process.execPath, [bin, ...args], {
    reject: false,
    env: { KUBECONFIG: undefined, CCM_PROVIDER: undefined, CLOUDLYCKE_INVENTORY: undefined, ...env },
    extendEnv: true,
    stdin: 'ignore',
    timeout: timeoutMs,
  });
  return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}
