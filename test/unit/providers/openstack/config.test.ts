import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseCloudConfig, readCloudConfig } from '../../../../src/providers/openstack/config.js';
import { credentials } from '../../../../src/providers/openstack/credentials.js';
import { loadConfig } from '../../../../src/providers/openstack/index.js';
import { invalidConfigMessage } from '../../helpers/invalid-config.js';

const fixture = (name: string) =>
  fileURLToPath(new URL(`../../../fixtures/openstack/${name}`, import.meta.url));

/** The one-line InvalidConfigError message that parsing `text` produces. */
const refusal = (text: string) => invalidConfigMessage(() => parseCloudConfig(text), 'the cloud.conf');

const GLOBAL =
  '[Global]\nauth-url=https://keystone.example.com:5000/v3\nregion=RegionOne\nusername=u\npassword=p\n';

describe("the official controller's example cloud.conf files", () => {
  it('accepts the password example unchanged (empty tenant-id and domain-id, [BlockStorage])', () => {
    const config = readCloudConfig(fixture('occm-cloud-config'));
    expect(config.global).toEqual({
      authUrl: 'http://192.128.1.15:5000/v3',
      region: 'RegionOne',
      endpointInterface: 'public',
      tlsInsecure: false,
      // no domain: Keystone's default domain; no project: the user's default project
      auth: { method: 'password', user: { name: 'admin', domain: { id: 'default' } }, password: 'passw0rd' },
    });
    expect(config.loadBalancer).toMatchObject({
      enabled: true,
      subnetId: '9c018814-f2a8-45dd-9679-5400d49b333a',
      floatingNetworkId: '80c9fc78-a2be-45d5-a85b-f17a6c98df92',
      lbMethod: 'ROUND_ROBIN',
      createMonitor: false,
      monitorDelaySeconds: 5,
      monitorTimeoutSeconds: 3,
      monitorMaxRetries: 1,
    });
    expect(config.networking).toEqual({
      publicNetworkNames: [],
      internalNetworkNames: [],
      ipv6SupportDisabled: false,
    });
  });

  it('accepts the application-credential form', () => {
    const config = readCloudConfig(fixture('occm-cloud-config-application-credential'));
    expect(config.global.auth).toEqual({
      method: 'application_credential',
      credential: { id: '423f19a4ac1e4f48bbb4180756e6eb6c' },
      secret: 'rEaqvJka48mpv',
    });
  });

  it('reads the Secret layout of the official manifest: kube-system/cloud-config, key cloud.conf', () => {
    const secret = parseYaml(readFileSync(fixture('occm-cloud-config-secret.yaml'), 'utf8'));
    expect(secret.metadata).toEqual({ name: 'cloud-config', namespace: 'kube-system' });
    expect(credentials.secretName).toBe('cloud-config');
    const field = credentials.fields.find((f) => f.secretKey === 'cloud.conf');
    expect(field).toMatchObject({ key: 'cloudConf', secret: true });
    const content = Buffer.from(secret.data['cloud.conf'], 'base64').toString('utf8');
    // The manifest's auth-url holds the placeholder <keystone_ip>, which is not a host: it is refused
    // as it stands, and accepted with any real host put in its place.
    expect(() => loadConfig({ cloudConf: content })).toThrow(
      '[Global] auth-url: "https://<keystone_ip>/identity/v3" is not an http(s) URL',
    );
    const config = loadConfig({ cloudConf: content.replace('<keystone_ip>', 'keystone.example.com') });
    expect(config.global).toMatchObject({
      authUrl: 'https://keystone.example.com/identity/v3',
      region: '',
      auth: {
        method: 'password',
        user: { name: 'user', domain: { id: '2a73b8f597c04551a0fdc8e95544be8a' } },
        password: 'pass',
        project: { id: 'c869168a828847f39f7f06edd7305637' },
      },
    });
  });

  it('takes the file given by path over the content', () => {
    const config = loadConfig({ cloudConfigPath: fixture('occm-cloud-config'), cloudConf: 'not even ini [' });
    expect(config.global.authUrl).toBe('http://192.128.1.15:5000/v3');
    expect(() => loadConfig({})).toThrow(/no cloud.conf given; pass --cloud-config/);
    expect(() => loadConfig({ cloudConfigPath: '/nonexistent/cloud.conf' })).toThrow(
      'cannot read the cloud config /nonexistent/cloud.conf (ENOENT)',
    );
  });
});

describe('parseCloudConfig', () => {
  it('reads every key the issue lists, case-insensitively, with quotes, comments and repeated keys', () => {
    const config = parseCloudConfig(`
[global]
Auth-URL="https://keystone.example.com/identity"
user-id=u1
password="p;#w"   ; a comment
tenant-name=proj
tenant-domain-name=Dom
region=R2
ca-file=/etc/ca.pem
tls-insecure=yes
os-endpoint-type=internalURL
[LoadBalancer]
subnet-id=s1
floating-network-id=f1
lb-method=least_connections
lb-provider=amphora
create-monitor=true
monitor-delay=1m30s
monitor-timeout=10
monitor-max-retries=3
manage-security-groups=false
[Networking]
public-network-name=public
public-network-name=ext
internal-network-name=private
ipv6-support-disabled=true
`);
    expect(config.global).toEqual({
      authUrl: 'https://keystone.example.com/identity',
      region: 'R2',
      endpointInterface: 'internal',
      caFile: '/etc/ca.pem',
      tlsInsecure: true,
      auth: {
        method: 'password',
        user: { id: 'u1' },
        password: 'p;#w',
        project: { name: 'proj', domain: { name: 'Dom' } },
      },
    });
    expect(config.loadBalancer).toMatchObject({
      subnetId: 's1',
      floatingNetworkId: 'f1',
      lbMethod: 'LEAST_CONNECTIONS',
      lbProvider: 'amphora',
      createMonitor: true,
      monitorDelaySeconds: 90,
      monitorTimeoutSeconds: 10,
      monitorMaxRetries: 3,
    });
    expect(config.networking).toEqual({
      publicNetworkNames: ['public', 'ext'],
      internalNetworkNames: ['private'],
      ipv6SupportDisabled: true,
    });
  });

  it('builds an application credential by name with its user', () => {
    const config = parseCloudConfig(
      '[Global]\nauth-url=https://k/v3\napplication-credential-name=monitoring\napplication-credential-secret=s\nusername=admin\nuser-domain-id=default\n',
    );
    expect(config.global.auth).toEqual({
      method: 'application_credential',
      credential: { name: 'monitoring', user: { name: 'admin', domain: { id: 'default' } } },
      secret: 's',
    });
  });

  it('refuses unknown and invalid keys in one line naming the section and key', () => {
    const line = GLOBAL.split('\n').length;
    expect(refusal(`${GLOBAL}usernme=x\n`)).toMatch(
      new RegExp(
        `^cloud\\.conf line ${line}: \\[Global\\] key usernme is not one ccm knows \\(did you mean username\\?\\); the keys of \\[Global\\] are auth-url, `,
      ),
    );
    expect(refusal(`${GLOBAL}bogus-key = 1\n`)).toMatch(
      new RegExp(`^cloud\\.conf line ${line}: \\[Global\\] key bogus-key is not one ccm knows; the keys`),
    );
    // A line without `=` may be a password on a line of its own: its number, never its text.
    const bare = refusal(`${GLOBAL}s3cr3t-Passw0rd\n`);
    expect(bare).toMatch(new RegExp(`^cloud\\.conf line ${line}: \\[Global\\] a line is not key = value; `));
    expect(bare).not.toContain('s3cr3t');
    expect(refusal(`${GLOBAL}[LoadBalancer]\nlb-method=RANDOM\n`)).toBe(
      'cloud.conf: [LoadBalancer] lb-method: "RANDOM" is not one of ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP, SOURCE_IP_PORT',
    );
    expect(refusal(`${GLOBAL}[LoadBalancer]\ncreate-monitor=maybe\n`)).toBe(
      'cloud.conf: [LoadBalancer] create-monitor: "maybe" is not a boolean (true or false)',
    );
    expect(refusal(`${GLOBAL}[LoadBalancer]\nmonitor-max-retries=11\n`)).toBe(
      'cloud.conf: [LoadBalancer] monitor-max-retries: "11" is not a whole number from 1 to 10',
    );
    expect(refusal(`${GLOBAL}[LoadBalancer]\nmonitor-delay=soon\n`)).toMatch(
      /\[LoadBalancer\] monitor-delay: "soon" is not a duration/,
    );
    expect(refusal(`${GLOBAL}os-endpoint-type=private\n`)).toMatch(
      /\[Global\] os-endpoint-type: "private" is not one of public, internal, admin/,
    );
    expect(refusal(`${GLOBAL}region=R3\n`)).toBe('cloud.conf: [Global] region: set 2 times; keep one');
    expect(refusal('[Global]\nregion=R\nusername=u\npassword=p\n')).toMatch(/\[Global\] auth-url: required/);
    expect(refusal('[Global]\nauth-url=https://k/v3\nusername=u\n')).toMatch(
      /\[Global\] password: required with username/,
    );
    expect(refusal('[Global]\nauth-url=https://k/v3\napplication-credential-id=a\n')).toMatch(
      /\[Global\] application-credential-secret: required with an application credential/,
    );
    expect(refusal(`${GLOBAL}[Foo]\nx=1\n`)).toMatch(/unknown section \[Foo\]/);
    expect(refusal(`auth-url=x\n${GLOBAL}`)).toMatch(/a key is outside any section/);
  });

  it('says in one line which known settings are not supported', () => {
    expect(refusal(`${GLOBAL}trust-id=t\n`)).toBe(
      'cloud.conf: [Global] trust-id: Keystone trusts are not supported; use an application credential or a password',
    );
    expect(refusal(`${GLOBAL}[LoadBalancer]\nmanage-security-groups=true\n`)).toMatch(
      /^cloud\.conf: \[LoadBalancer\] manage-security-groups: managing security groups is not supported/,
    );
    expect(refusal(`${GLOBAL}[LoadBalancer]\nuse-octavia=false\n`)).toMatch(
      /Neutron-LBaaS is not supported, only Octavia/,
    );
    expect(refusal(`${GLOBAL}[LoadBalancer]\ncascade-delete=false\n`)).toMatch(
      /\[LoadBalancer\] cascade-delete: ccm deletes load balancers with cascade/,
    );
    expect(refusal(`${GLOBAL}[LoadBalancerClass "dmz"]\nfloating-subnet-id=x\n`)).toMatch(
      /\[LoadBalancerClass "dmz"\] load balancer classes are not supported/,
    );
    // [Route] router-id names the router of the route controller
    expect(parseCloudConfig(`${GLOBAL}[Route]\nrouter-id=r1\n`).route).toEqual({ routerID: 'r1' });
    expect(parseCloudConfig(GLOBAL).route).toEqual({});
    // known but empty or at its default: accepted
    expect(() =>
      parseCloudConfig(`${GLOBAL}trust-id=\n[LoadBalancer]\nmanage-security-groups=false\n`),
    ).not.toThrow();
  });
});

describe('clouds.yaml', () => {
  const CLOUDS = `clouds:
  mycloud:
    auth:
      auth_url: https://keystone.example.com:5000/v3
      application_credential_id: "423f19a4ac1e4f48bbb4180756e6eb6c"
      application_credential_secret: "rEaqvJka48mpv"
    region_name: RegionOne
    interface: internal
    verify: false
  other:
    auth:
      auth_url: https://other.example.com/v3
      username: u
      password: p
      project_name: proj
      user_domain_name: Default
      project_domain_name: Default
`;
  let dir: string;
  let file: string;
  const setup = () => {
    dir = mkdtempSync(join(tmpdir(), 'ccm-clouds-'));
    file = join(dir, 'clouds.yaml');
    writeFileSync(file, CLOUDS);
  };
  const cleanup = () => rmSync(dir, { recursive: true, force: true });

  it('fills [Global] from the named cloud with use-clouds=true; cloud.conf keys win', () => {
    setup();
    try {
      const config = parseCloudConfig(
        `[Global]\nuse-clouds=true\nclouds-file=${file}\ncloud=mycloud\nregion=RegionTwo\n`,
      );
      expect(config.global).toEqual({
        authUrl: 'https://keystone.example.com:5000/v3',
        region: 'RegionTwo',
        endpointInterface: 'internal',
        tlsInsecure: true,
        auth: {
          method: 'application_credential',
          credential: { id: '423f19a4ac1e4f48bbb4180756e6eb6c' },
          secret: 'rEaqvJka48mpv',
        },
      });
    } finally {
      cleanup();
    }
  });

  it('OS_CLOUD alone (the cloud field) reads clouds.yaml from OS_CLIENT_CONFIG_FILE', () => {
    setup();
    try {
      const config = loadConfig({ cloud: 'other', cloudsFile: file });
      expect(config.global.auth).toEqual({
        method: 'password',
        user: { name: 'u', domain: { name: 'Default' } },
        password: 'p',
        project: { name: 'proj', domain: { name: 'Default' } },
      });
      expect(() => loadConfig({ cloud: 'nope', cloudsFile: file })).toThrow(
        `${file}: no cloud "nope" under clouds (it has: mycloud, other); set [Global] cloud or OS_CLOUD`,
      );
      writeFileSync(file, 'clouds:\n  c:\n    auth:\n      auth_url: https://k/v3\n      token: t\n');
      expect(() => loadConfig({ cloud: 'c', cloudsFile: file })).toThrow(
        /clouds\.c\.auth has a key ccm does not support; the keys are auth_url/,
      );
    } finally {
      cleanup();
    }
  });
});
