/**
 * The chart's templates are generated (`ccm manifests --helm`, npm run chart) from the code that prints
 * the manifests: the committed ones must be what that code writes today, as docs/reference is kept
 * current by `npm run readme`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { HELM_HEADER, helmTemplates, SCHEMA_FILE, valuesSchema } from '../../../src/cli/manifests-helm.js';
import { CHART } from '../../helpers/helm.js';

describe('charts/ccm', () => {
  it('holds the templates ccm manifests --helm writes today (else: npm run chart)', async () => {
    const files = await helmTemplates();
    const dir = join(CHART, 'templates');
    const committed = readdirSync(dir).filter((f) =>
      readFileSync(join(dir, f), 'utf8').startsWith(HELM_HEADER),
    );
    expect(committed.sort()).toEqual([...files.keys()].sort());
    for (const [name, text] of files) expect(readFileSync(join(dir, name), 'utf8'), name).toBe(text);
  });

  it('holds the values.schema.json the code writes, naming exactly the keys values.yaml has', () => {
    const schema = valuesSchema();
    expect(readFileSync(join(CHART, SCHEMA_FILE), 'utf8')).toBe(`${JSON.stringify(schema, null, 2)}\n`);
    type Node = { properties?: Record<string, Node> };
    const keysOf = (node: Node, prefix = ''): string[] =>
      Object.entries(node.properties ?? {}).flatMap(([k, v]) => [
        `${prefix}${k}`,
        ...keysOf(v, `${prefix}${k}.`),
      ]);
    const valueKeys = (value: unknown, prefix = ''): string[] =>
      value && typeof value === 'object' && !Array.isArray(value)
        ? Object.entries(value).flatMap(([k, v]) => [
            `${prefix}${k}`,
            // Maps of the user's own keys: their contents are not the chart's names.
            ...(['nodeSelector', 'env', 'resources.requests', 'resources.limits'].includes(`${prefix}${k}`)
              ? []
              : valueKeys(v, `${prefix}${k}.`)),
          ])
        : [];
    const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8'));
    expect(keysOf(schema as Node).sort()).toEqual(valueKeys(values).sort());
  });

  it("has ccm's version, as the image it names by default", () => {
    const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as Record<string, string>;
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(chart.version).toBe(pkg.version);
    expect(chart.appVersion).toBe(pkg.version);
  });
});
