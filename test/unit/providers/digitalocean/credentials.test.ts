import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { originOf, resolveProviderValues } from '../../../../src/cli/provider-config.js';
import { digitalocean } from '../../../../src/providers/digitalocean/index.js';
import { loadProvider } from '../../../../src/providers/registry.js';
import { DigitalOceanSimulator } from '../../../clouds/digitalocean/server.js';
import { conformsToDigitalOceanOpenApi } from '../../../helpers/openapi.js';

const officialSecret = parse(
  readFileSync(new URL('../../../fixtures/digitalocean/secret.yaml', import.meta.url), 'utf8'),
) as { metadata: { name: string; namespace: string }; stringData: Record<string, string> };

let sim: DigitalOceanSimulator;
beforeAll(async () => {
  sim = await DigitalOceanSimulator.start({ token: officialSecret.stringData['access-token'] });
});
afterAll(async () => {
  await sim?.stop();
});
afterEach(() => {
  expect(sim.takeViolations()).toEqual([]);
});

describe('DigitalOcean definition', () => {
  it('is registered under "digitalocean" with the scheme of its provider IDs', async () => {
    expect(await loadProvider('digitalocean')).toBe(digitalocean);
    expect(digitalocean.providerIdScheme).toBe('digitalocean');
  });

  it("reads the official controller's Secret kube-system/digitalocean, key access-token, unchanged", async () => {
    const { secretName, fields } = digitalocean.credentials;
    expect([officialSecret.metadata.namespace, officialSecret.metadata.name]).toEqual([
      'kube-system',
      secretName,
    ]);
    const values: Record<string, string> = { apiUrl: sim.url };
    for (const field of fields) {
      const fromSecret = field.secretKey ? officialSecret.stringData[field.secretKey] : undefined;
      if (fromSecret !== undefined) values[field.key] = fromSecret;
    }
    expect(Object.keys(values).sort()).toEqual(['apiUrl', 'token']);
    sim.addDroplets({ name: 'w1' });
    const provider = digitalocean.create(values, {});
    expect((await provider.instances.list()).map((i) => i.name)).toEqual(['w1']);
    expect(sim.requests.at(-1)?.authorization).toBe(`Bearer ${officialSecret.stringData['access-token']}`);
  });

  it('takes DO_ACCESS_TOKEN and DO_OVERRIDE_URL; --cloud-api-url wins over the env', () => {
    const env = {
      DO_ACCESS_TOKEN: 'dop_v1_x',
      DO_OVERRIDE_URL: 'https://do.example.net',
      DO_API_TIMEOUT_SECONDS: '5',
    };
    expect(resolveProviderValues(digitalocean, {}, env)).toEqual({
      token: 'dop_v1_x',
      apiUrl: 'https://do.example.net',
      timeoutSeconds: '5',
    });
    expect(resolveProviderValues(digitalocean, { 'cloud-api-url': 'http://127.0.0.1:9' }, env).apiUrl).toBe(
      'http://127.0.0.1:9',
    );
    const token = digitalocean.credentials.fields.find((f) => f.key === 'token');
    expect(token).toMatchObject({
      secret: true,
      required: true,
      prompt: 'password',
      secretKey: 'access-token',
    });
  });

  it('refuses a timeout that is not a number of seconds', () => {
    expect(() => digitalocean.create({ token: 't', timeoutSeconds: 'soon' }, {})).toThrow(
      /^DO_API_TIMEOUT_SECONDS "soon" is not a number of seconds from 0 to 600; use e.g. 30$/,
    );
  });

  it('asks the API server to reach kubelets by IP: droplet names do not resolve', () => {
    expect(digitalocean.clusterFlags).toEqual({
      kubeApiserver: { 'kubelet-preferred-address-types': 'InternalIP,ExternalIP,Hostname' },
    });
  });
});

describe('the region and VPC of load balancers', () => {
  it("are read from the official controller's REGION and DO_CLUSTER_VPC_ID, or the Secret's keys region and vpc-id", () => {
    const env = {
      DO_ACCESS_TOKEN: 't',
      REGION: 'fra1',
      DO_CLUSTER_VPC_ID: '0d3f5a2e-7b1c-4e9d-8a6f-2c4b6d8e0f1a',
    };
    expect(resolveProviderValues(digitalocean, {}, env)).toMatchObject({
      region: 'fra1',
      vpcId: '0d3f5a2e-7b1c-4e9d-8a6f-2c4b6d8e0f1a',
    });
    expect(
      resolveProviderValues(digitalocean, {}, { DO_ACCESS_TOKEN: 't' }, { region: 'ams3', 'vpc-id': '' }),
    ).toMatchObject({ region: 'ams3' });
  });

  it('refuses a value that is no region slug or VPC id, in one line naming where it is set', () => {
    expect(() => digitalocean.create({ token: 't', region: 'New York 3' }, {})).toThrow(
      /^DigitalOcean region "New York 3" is not a region slug; set REGION \(or key region of Secret kube-system\/digitalocean\) to e\.g\. nyc3$/,
    );
    expect(() => digitalocean.create({ token: 't', vpcId: 'default' }, {})).toThrow(
      /^DigitalOcean VPC id "default" is not a VPC id \(a UUID\); set DO_CLUSTER_VPC_ID/,
    );
  });

  it('names where a bad value was given, when the edge says (review 44, finding 7)', () => {
    const secret = { namespace: 'kube-system', name: 'do-trial', data: { 'vpc-id': 'abc' } };
    const origin = originOf(
      digitalocean,
      { 'cloud-api-url': 'http://127.0.0.1:1' },
      { REGION: 'x y' },
      secret,
    );
    expect([origin('vpcId'), origin('region'), origin('apiUrl'), origin('token')]).toEqual([
      'key vpc-id of Secret kube-system/do-trial',
      'env REGION',
      '--cloud-api-url',
      // Unset: it belongs in the Secret the operator named.
      'key access-token of Secret kube-system/do-trial',
    ]);
    expect(() => digitalocean.create({ token: 't', vpcId: 'abc' }, { origin })).toThrow(
      'DigitalOcean VPC id "abc" (from key vpc-id of Secret kube-system/do-trial) is not a VPC id (a UUID); give the id of the cluster\'s VPC',
    );
    expect(() =>
      digitalocean.create({ token: 't', region: 'x y' }, { origin: () => '--set region' }),
    ).toThrow('DigitalOcean region "x y" (from --set region) is not a region slug; give one such as nyc3');
  });

  it('a refused token names where it came from', async () => {
    const provider = digitalocean.create(
      { token: 'dop_v1_wrong', apiUrl: sim.url },
      { origin: (f) => (f === 'token' ? 'key access-token of Secret kube-system/do-trial' : undefined) },
    );
    await expect(provider.verifyCredentials?.()).rejects.toThrow(
      /the token is invalid or revoked; create one with read and write scope \(the token from key access-token of Secret kube-system\/do-trial\)$/,
    );
  });
});

conformsToDigitalOceanOpenApi();
