import type { CredentialSchema } from '../types.js';

/**
 * Triton has no official cloud controller, so the Secret is ccm's own (kube-system/triton). Field
 * names and environment variables are the ones the Triton tools use (node-triton: TRITON_*, the
 * older node-smartdc: SDC_*), so a shell already set up for `triton` works as it is.
 */
export const SECRET_NAME = 'triton';

export const credentials: CredentialSchema = {
  secretName: SECRET_NAME,
  fields: [
    {
      key: 'url',
      description: 'CloudAPI URL of the data centre, e.g. https://us-east-1.api.example.com',
      secret: false,
      required: true,
      prompt: 'input',
      env: ['TRITON_URL', 'SDC_URL'],
      secretKey: 'url',
    },
    {
      key: 'account',
      description: 'Account login name (the keyId and every path start with it)',
      secret: false,
      required: true,
      prompt: 'input',
      env: ['TRITON_ACCOUNT', 'SDC_ACCOUNT'],
      secretKey: 'account',
    },
    {
      key: 'user',
      description: 'Sub-user login, when the key belongs to a sub-user of the account (RBAC)',
      secret: false,
      required: false,
      prompt: 'input',
      env: ['TRITON_USER', 'SDC_USER'],
      secretKey: 'user',
    },
    {
      key: 'keyId',
      description:
        'Fingerprint of the signing key (MD5 aa:bb:… or SHA256:…); computed from the private key when it is given, required with an ssh-agent',
      secret: false,
      required: false,
      prompt: 'input',
      // Asked after the key, and only without one: with the key it is computed, not typed.
      computedFrom: 'keyMaterial',
      env: ['TRITON_KEY_ID', 'SDC_KEY_ID'],
      secretKey: 'key-id',
    },
    {
      key: 'keyMaterial',
      description:
        'The SSH private key (PEM or OpenSSH format; RSA, ECDSA, Ed25519 or DSA), or the path of its file; without it ccm signs through the ssh-agent',
      secret: true,
      required: false,
      prompt: 'ssh-key',
      env: ['TRITON_KEY_MATERIAL', 'SDC_KEY_MATERIAL'],
      secretKey: 'key-material',
      // The Secret keeps the private key and its passphrase in the cluster: not a person's own key.
      // ECDSA, not Ed25519: a CloudAPI older than TRITON-2417 (December 2023) does not verify Ed25519.
      advice:
        "A key of its own for ccm is recommended, not a personal one: make it with `ssh-keygen -t ecdsa -b 256 -N '' -f ~/.ssh/ccm-triton`, add ~/.ssh/ccm-triton.pub to the account (`triton key add ~/.ssh/ccm-triton.pub`, or the portal), then choose it below.",
    },
    {
      key: 'keyPassphrase',
      description: 'Passphrase of an encrypted private key',
      secret: true,
      required: false,
      prompt: 'password',
      env: ['TRITON_KEY_PASSPHRASE', 'SDC_KEY_PASSPHRASE'],
      secretKey: 'key-passphrase',
    },
    {
      key: 'sshAuthSock',
      description: 'Socket of the ssh-agent that signs when no private key is given',
      secret: false,
      required: false,
      prompt: 'input',
      env: ['SSH_AUTH_SOCK'],
    },
    {
      key: 'datacenter',
      description:
        'Data centre name (Node region, CNS host names); default: the entry of ListDatacenters whose URL is the CloudAPI URL',
      secret: false,
      required: false,
      prompt: 'input',
      env: ['TRITON_DATACENTER'],
    },
    {
      key: 'cnsSuffix',
      description: 'DNS suffix of Triton CNS in this cloud (service names end in .<dc>.<suffix>)',
      secret: false,
      required: false,
      default: 'triton.zone',
      prompt: 'input',
      env: ['TRITON_CNS_SUFFIX'],
    },
    {
      key: 'routeNetwork',
      description:
        "The Nodes' fabric network whose static routes carry the Pod routes of the route controller, as VLAN/NETWORK-UUID (e.g. 2/7ed4b4b8-…); unset: no routes",
      secret: false,
      required: false,
      prompt: 'input',
      env: ['TRITON_ROUTE_NETWORK'],
    },
    {
      key: 'cmonGroups',
      description:
        "CMON groups ccm keeps in the triton.cmon.groups tag of each Node's machine: cluster (the cluster identity), cluster=NAME, role (<cluster group>_control-plane, _worker), comma-separated, or none; unset: ccm leaves the tag alone",
      secret: false,
      required: false,
      prompt: 'input',
      flag: 'cmon-groups',
      env: ['TRITON_CMON_GROUPS'],
      secretKey: 'cmon-groups',
      asked: false,
    },
  ],
};
