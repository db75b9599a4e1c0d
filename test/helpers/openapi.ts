/**
 * The checks against DigitalOcean's OpenAPI document, which is not in the repository
 * (test/clouds/digitalocean/openapi.ts says where it is looked for). They are tests of their own, so
 * that without the document they are reported as skipped, with the reason, and never pass empty.
 */
import { afterEach, expect, it, type TestContext } from 'vitest';
import { SpecChecker, specLocation, specViolations } from '../clouds/digitalocean/openapi.js';

/**
 * Call last in a file whose tests talk to the DigitalOcean simulator: one more test, that every request
 * and response of the tests above matched the document.
 */
export function conformsToDigitalOceanOpenApi(): void {
  const seen: string[] = [];
  afterEach((ctx) => {
    for (const violation of specViolations.splice(0)) seen.push(`${ctx.task.name}: ${violation}`);
  });
  withDigitalOceanOpenApi("every request and response above matched DigitalOcean's OpenAPI document", () => {
    expect(seen).toEqual([]);
  });
}

/** A test that needs the document, skipped with the reason when it is not found. */
export function withDigitalOceanOpenApi(
  name: string,
  fn: (spec: SpecChecker, ctx: TestContext) => unknown,
): void {
  it(name, async (ctx) => {
    const where = specLocation();
    if ('missing' in where) return ctx.skip(where.missing);
    const spec = await SpecChecker.load();
    if (!spec) throw new Error(`${where.path} was found but did not load`);
    return fn(spec, ctx);
  });
}
