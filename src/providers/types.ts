/**
 * The provider contract. A provider never touches Kubernetes objects and never reads the environment
 * itself: its configuration is resolved at the edge (flags, env, Secret) and handed to `create`.
 */

export type InstanceState = 'running' | 'stopped' | 'gone';

export type NodeAddressType = 'Hostname' | 'InternalIP' | 'ExternalIP' | 'InternalDNS' | 'ExternalDNS';

export interface NodeAddress {
  type: NodeAddressType;
  address: string;
}

export interface Instance {
  providerID: string;
  name: string;
  state: InstanceState;
  /** Instance type (size, flavor, package); empty when the cloud has none. */
  type: string;
  region: string;
  zone: string;
  addresses: NodeAddress[];
  /** Extra Node labels the cloud offers; never in the kubernetes.io / k8s.io domains. */
  labels: Record<string, string>;
}

export interface Instances {
  /**
   * Every instance, in one (paginated) sweep. Throws when any page fails: a partial listing is never
   * returned, because callers read absence from it.
   */
  list(signal?: AbortSignal): Promise<Instance[]>;
  /**
   * One instance by its provider ID. Throws NotFoundError only when the cloud positively says the
   * instance does not exist; any other failure throws another error.
   */
  get(providerID: string, signal?: AbortSignal): Promise<Instance>;
}

/** One credential or setting of a provider, as the official controller names it. */
export interface CredentialField {
  key: string;
  description: string;
  /** Secret values are never printed, logged, put in argv or in --json output. */
  secret: boolean;
  required: boolean;
  prompt: 'input' | 'password' | 'file' | 'editor';
  /** Environment variables read at the edge, first match wins. */
  env: string[];
  /** Key in the Kubernetes Secret the official controller reads, when the field lives there. */
  secretKey?: string;
}

export interface CredentialSchema {
  /** Secret the official controller reads (namespace kube-system), or undefined if the cloud has none. */
  secretName?: string;
  fields: CredentialField[];
}

/** Capabilities; absent optional ones mean "unsupported". */
export interface Provider {
  readonly name: string;
  readonly providerIdScheme: string;
  readonly instances: Instances;
}

/** What a provider module exports: its description, and a factory for configured instances. */
export interface ProviderDefinition {
  readonly name: string;
  readonly providerIdScheme: string;
  readonly description: string;
  readonly credentials: CredentialSchema;
  /** Key of the value that the CLI's shared `--cloud-config <file>` flag fills, when the provider takes one. */
  readonly configFileField?: string;
  /**
   * Builds the provider from resolved values (keyed by CredentialField.key). Throws
   * InvalidConfigError naming the missing or malformed value.
   */
  create(values: ProviderValues, deps: ProviderDeps): Provider;
  /** What `ccm cluster prepare` sets for this cloud beyond --cloud-provider=external. */
  readonly clusterFlags?: ClusterFlags;
}

export interface ClusterFlags {
  /** Extra kube-apiserver flags, without dashes (e.g. preferred kubelet address types). */
  kubeApiserver?: Record<string, string>;
  /** The kubelet's --provider-id for the Node of this name, when the cloud wants it set at registration. */
  kubeletProviderID?: (nodeName: string) => string;
}

export type ProviderValues = Readonly<Record<string, string | undefined>>;

export interface ProviderDeps {
  /** Called once per request the provider sends to its cloud (for reports and benchmarks). */
  onCloudCall?: (what: string) => void;
}
