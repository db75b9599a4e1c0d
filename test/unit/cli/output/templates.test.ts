/**
 * -o jsonpath= as kubectl reads it, and its --allow-missing-template-keys (review 44, finding 8).
 * kubectl's default is true (k8s.io/cli-runtime pkg/genericclioptions/kube_template_flags.go,
 * NewKubeTemplatePrintFlags: allowMissingKeysPtr := true); false gives client-go's error
 * (k8s.io/client-go util/jsonpath/jsonpath.go, evalField: `fmt.Errorf("%s is not found", node.Value)`
 * when no input has the field; evalField returns nothing, without error, for no input).
 */
import { describe, expect, it } from 'vitest';
import { jsonpathText, MissingKeyError } from '../../../../src/cli/output/templates.js';

const report = {
  nodes: [
    { name: 'a', status: 'failed', reason: 'no instance' },
    { name: 'b', status: 'ok' },
  ],
  empty: [],
};
const strict = { allowMissingKeys: false };

describe('jsonpathText', () => {
  it('prints nothing for a field no object has, by default (kubectl)', () => {
    expect(jsonpathText('{.nodes[*].nmae}', report)).toBe('');
    expect(jsonpathText('{.nmae}', report)).toBe('');
  });

  it('with allowMissingKeys false, a field no object has is client-go\'s "is not found"', () => {
    expect(() => jsonpathText('{.nodes[*].nmae}', report, strict)).toThrow(MissingKeyError);
    expect(() => jsonpathText('{.nodes[*].nmae}', report, strict)).toThrow(
      'error executing jsonpath "{.nodes[*].nmae}": nmae is not found',
    );
    expect(() => jsonpathText('{.nodse[*].name}', report, strict)).toThrow(/: nodse is not found$/);
    expect(() => jsonpathText('{range .nodes[*]}{.nmae}{end}', report, strict)).toThrow(/nmae is not found/);
  });

  it('with allowMissingKeys false, a field one object has, an empty list and an empty filter are no error', () => {
    expect(jsonpathText('{.nodes[*].reason}', report, strict)).toBe('no instance');
    expect(jsonpathText('{.empty[*].name}', report, strict)).toBe('');
    expect(jsonpathText('{.nodes[?(@.status=="gone")].name}', report, strict)).toBe('');
    expect(jsonpathText('{.nodes[5:9].name}', report, strict)).toBe('');
  });
});
