/**
 * The chart's templates are generated (`ccm manifests --helm`, npm run chart) from the code that prints
 * the manifests: the committed ones must be what that code writes today, as docs/reference is kept
 * current by `npm run readme`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { HELM_HEADER, helmTemplates } from '../../../src/cli/manifests-helm.js';
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

  it("has ccm's version, as the image it names by default", () => {
    const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as Record<string, string>;
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(chart.version).toBe(pkg.version);
    expect(chart.appVersion).toBe(pkg.version);
  });
});
