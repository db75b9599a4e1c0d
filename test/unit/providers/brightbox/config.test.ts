import { describe, expect, it } from 'vitest';
import { resolveProviderValues } from '../../../../src/cli/provider-config.js';
import { ANNOTATIONS, parseAnnotations } from '../../../../src/providers/brightbox/annotations.js';
import { brightbox, clientOptions } from '../../../../src/providers/brightbox/index.js';
import { InvalidConfigError } from '../../../../src/providers/errors.js';
import { loadProvider, providerNames } from '../../../../src/providers/registry.js';

describe('Brightbox configuration', () => {
  it("is registered and reads the official controller's Secret keys and environment names", async () => {
    expect(providerNames).toContain('brightbox');
    expect(await loadProvider('brightbox')).toBe(brightbox);
    expect(brightbox.credentials.secretName).toBe('brightbox-credentials');
    expect(brightbox.credentials.fields.map((f) => [f.key, f.env, f.secretKey, f.secret])).toEqual([
      ['client', ['BRIGHTBOX_CLIENT'], 'controller-client', false],
      ['clientSecret', ['BRIGHTBOX_CLIENT_SECRET'], 'controller-client-secret', true],
      ['apiUrl', ['BRIGHTBOX_API_URL'], 'apiurl', false],
      ['account', ['BRIGHTBOX_ACCOUNT'], undefined, false],
    ]);
  });

  it('fills the API URL from --cloud-api-url before BRIGHTBOX_API_URL', () => {
    const values = resolveProviderValues(
      brightbox,
      { provider: 'brightbox', 'cloud-api-url': 'https://api.gb1s.brightbox.com' },
      { BRIGHTBOX_CLIENT: 'cli-abcde', BRIGHTBOX_CLIENT_SECRET: 's', BRIGHTBOX_API_URL: 'https://other' },
    );
    expect(values).toMatchObject({
      client: 'cli-abcde',
      clientSecret: 's',
      apiUrl: 'https://api.gb1s.brightbox.com',
    });
  });

  it('builds a provider with the default API URL', () => {
    const p = brightbox.create({ client: 'cli-abcde', clientSecret: 's' }, {});
    expect(p.name).toBe('brightbox');
    expect(p.loadBalancers).toBeDefined();
  });

  it("hands `ccm run`'s shared budget to the client, which then takes it per request", async () => {
    const deps = { takeToken: async () => undefined, rateLimited: () => {} };
    expect(clientOptions({ client: 'cli-abcde', clientSecret: 's' }, deps)).toMatchObject(deps);
    expect(brightbox.create({ client: 'cli-abcde', clientSecret: 's' }, deps).requestBudgeted).toBe(true);
    expect(brightbox.create({ client: 'cli-abcde', clientSecret: 's' }, {}).requestBudgeted).toBeUndefined();
  });

  const bad: [Record<string, string>, string][] = [
    [
      { clientSecret: 's' },
      'no Brightbox API client id; set BRIGHTBOX_CLIENT (Secret key controller-client)',
    ],
    [
      { client: 'cli-abcde' },
      'no Brightbox API client secret; set BRIGHTBOX_CLIENT_SECRET (Secret key controller-client-secret)',
    ],
    [{ client: 'c', clientSecret: 's', apiUrl: 'api.gb1' }, 'BRIGHTBOX_API_URL "api.gb1" is not a URL'],
    [{ client: 'c', clientSecret: 's', apiUrl: 'http://api.gb1.brightbox.com' }, 'must be an https URL'],
    [{ client: 'c', clientSecret: 's', apiUrl: 'https://u:p@api.gb1.brightbox.com' }, 'without credentials'],
    [
      { client: 'c', clientSecret: 's', account: 'brightbox' },
      'BRIGHTBOX_ACCOUNT "brightbox" is not an account id',
    ],
  ];
  for (const [values, message] of bad) {
    it(`refuses ${JSON.stringify(values)} with one line`, () => {
      let err: unknown;
      try {
        brightbox.create(values, {});
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect((err as Error).message).toContain(message);
      expect((err as Error).message).not.toContain('\n');
      if (values.clientSecret) expect((err as Error).message).not.toContain(`p@`);
    });
  }

  it('allows plain http on loopback only (the simulator, a local proxy)', () => {
    expect(() =>
      brightbox.create({ client: 'c', clientSecret: 's', apiUrl: 'http://127.0.0.1:8080' }, {}),
    ).not.toThrow();
  });
});

describe('Brightbox annotations', () => {
  it('every annotation is in the official prefix (or its alias) and has a description', () => {
    for (const spec of Object.values(ANNOTATIONS)) {
      expect(spec.key.startsWith('service.beta.kubernetes.io/brightbox-load-balancer-')).toBe(true);
      expect(spec.description.length).toBeGreaterThan(10);
      expect(spec.accepted.length).toBeGreaterThan(0);
    }
  });

  it('reads nothing from a Service without them: http listeners, defaults elsewhere', () => {
    expect(parseAnnotations({})).toEqual({
      listenerProtocol: 'http',
      sslPorts: [],
      sslDomains: [],
      healthcheck: {},
    });
  });

  const bad: [Record<string, string>, string][] = [
    [
      { [ANNOTATIONS.listenerProtocol.key]: 'udp' },
      `${ANNOTATIONS.listenerProtocol.key}="udp" is not valid; accepted: http | tcp | https`,
    ],
    [{ [ANNOTATIONS.listenerProxyProtocol.key]: 'v3' }, 'accepted: v1 | v2 | v2-ssl | v2-ssl-cn'],
    [{ [ANNOTATIONS.healthcheckProtocol.key]: 'https' }, 'accepted: http | tcp'],
    [
      { [ANNOTATIONS.healthcheckTimeout.key]: '-1' },
      `${ANNOTATIONS.healthcheckTimeout.key}="-1" is not valid`,
    ],
    [
      { [ANNOTATIONS.healthcheckInterval.aliases[0]]: '0' },
      'aws-load-balancer-healthcheck-interval="0" is not valid',
    ],
    [{ [ANNOTATIONS.listenerIdleTimeout.key]: '4294967296' }, 'accepted: milliseconds, 1-4294967295'],
    [{ [ANNOTATIONS.cloudIPAllocations.key]: 'cip-ab' }, 'accepted: one cloud IP id, cip-xxxxx'],
    [{ [ANNOTATIONS.cloudIPAllocations.key]: 'cip-abcde,cip-fghij' }, 'is not valid'],
    [{ [ANNOTATIONS.healthcheckRequest.key]: 'healthz' }, 'accepted: a URL path'],
    [{ [ANNOTATIONS.sslPorts.key]: '443' }, `needs ${ANNOTATIONS.sslDomains.key}`],
    [{ [ANNOTATIONS.sslDomains.key]: 'not a domain' }, 'is not valid'],
    [
      { [ANNOTATIONS.listenerProtocol.key]: 'tcp', [ANNOTATIONS.sslDomains.key]: 'shop.example.com' },
      'need listener protocol http or https, not tcp',
    ],
  ];
  for (const [annotations, message] of bad) {
    it(`refuses ${JSON.stringify(annotations)}`, () => {
      expect(() => parseAnnotations(annotations)).toThrow(InvalidConfigError);
      expect(() => parseAnnotations(annotations)).toThrow(message);
    });
  }

  it('reads SSL ports by number or name and the extra certificate names', () => {
    expect(
      parseAnnotations({
        [ANNOTATIONS.sslPorts.key]: '8443, https-alt',
        [ANNOTATIONS.sslDomains.key]: 'shop.example.com',
      }),
    ).toMatchObject({ sslPorts: ['8443', 'https-alt'], sslDomains: ['shop.example.com'] });
  });
});
