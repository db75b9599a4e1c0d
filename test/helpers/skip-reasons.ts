/**
 * Reporter (vitest.config.ts): after the run, every skipped test that gave a reason, under its reason,
 * so that a skip is never silent. Today that is only the checks against DigitalOcean's OpenAPI document
 * when it is not found (test/helpers/openapi.ts).
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SkipReasons implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const byReason = new Map<string, string[]>();
    for (const module of modules) {
      for (const test of module.children.allTests('skipped')) {
        const result = test.result();
        const note = result.state === 'skipped' ? result.note : undefined;
        if (!note) continue;
        const tests = byReason.get(note) ?? [];
        tests.push(`${module.relativeModuleId} > ${test.fullName}`);
        byReason.set(note, tests);
      }
    }
    for (const [reason, tests] of byReason) {
      const lines = [`${tests.length} skipped: ${reason}`, ...tests.map((t) => `  ↓ ${t}`)];
      process.stdout.write(`\n${lines.join('\n')}\n`);
    }
  }
}
