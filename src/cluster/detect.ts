/**
 * Which layout a machine has, which files carry each component's flags, and which version each
 * component runs. Reads through a Host only (local root, test folder or ssh), runs nothing but
 * `<binary> --version`, and never guesses: a version that cannot be learned is left out.
 *
 * kubeadm: /etc/kubernetes/manifests/kube-apiserver.yaml (control plane) or /var/lib/kubelet/kubeadm-flags.env
 *   (every node; a worker has only this). The kubelet's override file (KUBELET_EXTRA_ARGS) is the one named by
 *   the kubeadm drop-in's EnvironmentFile=, else /etc/default/kubelet or /etc/sysconfig/kubelet if present.
 * hard way: /etc/systemd/system/kube-apiserver.service, kube-controller-manager.service, kubelet.service.
 */
import * as staticPod from './static-pod.js';
import * as systemdUnit from './systemd-unit.js';
import { splitLines } from './text.js';
import type { Component, ComponentFile, Detection, Host, Version } from './types.js';
import { formatVersion, parseVersion, versionFromImage, versionFromOutput } from './versions.js';

export const MANIFESTS_DIR = '/etc/kubernetes/manifests';
export const KUBEADM_FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env';
export const KUBEADM_FLAGS_VARIABLE = 'KUBELET_KUBEADM_ARGS';
export const EXTRA_ARGS_VARIABLE = 'KUBELET_EXTRA_ARGS';
/** Where the kubeadm package (and operators) put the kubelet drop-in; the /etc one wins in systemd. */
export const KUBELET_DROPIN_DIRS = [
  '/etc/systemd/system/kubelet.service.d',
  '/usr/lib/systemd/system/kubelet.service.d',
  '/lib/systemd/system/kubelet.service.d',
];
export const EXTRA_ARGS_FILES = ['/etc/default/kubelet', '/etc/sysconfig/kubelet'];
export const HARD_WAY_UNITS: Record<Component, string> = {
  'kube-apiserver': '/etc/systemd/system/kube-apiserver.service',
  'kube-controller-manager': '/etc/systemd/system/kube-controller-manager.service',
  kubelet: '/etc/systemd/system/kubelet.service',
};

export interface DetectOptions {
  /** Overrides what the host reports, e.g. "v1.32.4" (the --kubelet-version flag). */
  kubeletVersion?: string;
  apiserverVersion?: string;
  controllerManagerVersion?: string;
}

/** Neither a kubeadm nor a hard-way layout was found. */
export class NotDetectedError extends Error {
  override name = 'NotDetectedError';
}

const manifestPath = (c: Component) => `${MANIFESTS_DIR}/${c}.yaml`;

/** The kubelet drop-in's environment files and program, from the first drop-in that has them. */
async function kubeletDropIn(host: Host): Promise<{ envFiles: string[]; program?: string }> {
  const envFiles: string[] = [];
  let program: string | undefined;
  for (const dir of KUBELET_DROPIN_DIRS) {
    const names = (await host.list(dir)).filter((n) => n.endsWith('.conf')).sort();
    for (const name of names) {
      const bytes = await host.read(`${dir}/${name}`);
      if (!bytes) continue;
      for (const line of splitLines(bytes.toString('utf8'))) {
        const env = /^\s*EnvironmentFile\s*=\s*-?(\S+)/.exec(line.content);
        if (env?.[1] && !envFiles.includes(env[1])) envFiles.push(env[1]);
      }
      const exec = systemdUnit.readExecStart(bytes)[0];
      if (exec) program = exec;
    }
  }
  return program ? { envFiles, program } : { envFiles };
}

async function exists(host: Host, path: string): Promise<boolean> {
  return (await host.read(path)) !== undefined;
}

async function binaryVersion(host: Host, program: string): Promise<Version | undefined> {
  try {
    const result = await host.run([program, '--version']);
    if (result.exitCode !== 0) return undefined;
    return versionFromOutput(`${result.stdout}\n${result.stderr}`);
  } catch {
    return undefined;
  }
}

function fromOption(text: string | undefined, flag: string): Version | undefined {
  if (text === undefined) return undefined;
  const v = parseVersion(text);
  if (!v) throw new Error(`${flag} ${text} is not a Kubernetes version; pass e.g. ${flag} v1.32.4`);
  return v;
}

/**
 * Finds the layout, the files to edit (for a component with several files, the first is where new flags
 * go; the others only get corrections of flags they already carry) and the component versions:
 * from the options, else the manifest's image tag, else `<binary> --version` on the host.
 */
export async function detect(host: Host, options: DetectOptions = {}): Promise<Detection> {
  const given: Array<[Component, string | undefined, string]> = [
    ['kubelet', options.kubeletVersion, '--kubelet-version'],
    ['kube-apiserver', options.apiserverVersion, '--apiserver-version'],
    ['kube-controller-manager', options.controllerManagerVersion, '--controller-manager-version'],
  ];
  const versions: Partial<Record<Component, Version>> = {};
  const versionSources: Partial<Record<Component, string>> = {};
  for (const [component, text, flag] of given) {
    const v = fromOption(text, flag);
    if (v) {
      versions[component] = v;
      versionSources[component] = flag;
    }
  }
  const learn = (component: Component, v: Version | undefined, source: string) => {
    if (versions[component] || !v) return;
    versions[component] = v;
    versionSources[component] = source;
  };

  const kubeadm =
    (await exists(host, manifestPath('kube-apiserver'))) ||
    (await exists(host, manifestPath('kube-controller-manager'))) ||
    (await exists(host, KUBEADM_FLAGS_ENV));
  const files: ComponentFile[] = [];

  if (kubeadm) {
    for (const component of ['kube-apiserver', 'kube-controller-manager'] as const) {
      const path = manifestPath(component);
      const bytes = await host.read(path);
      if (!bytes) continue;
      files.push({ component, kind: 'static-pod', path });
      const image = staticPod.readImage(bytes, component);
      learn(component, image ? versionFromImage(image) : undefined, 'image tag');
    }
    files.push({
      component: 'kubelet',
      kind: 'env-file',
      path: KUBEADM_FLAGS_ENV,
      variable: KUBEADM_FLAGS_VARIABLE,
    });
    const dropIn = await kubeletDropIn(host);
    const candidates = dropIn.envFiles.filter((p) => p !== KUBEADM_FLAGS_ENV);
    for (const path of candidates.length > 0 ? candidates : EXTRA_ARGS_FILES) {
      if (await exists(host, path)) {
        files.push({ component: 'kubelet', kind: 'env-file', path, variable: EXTRA_ARGS_VARIABLE });
      }
    }
    if (!versions.kubelet) {
      const program = dropIn.program ?? 'kubelet';
      learn('kubelet', await binaryVersion(host, program), `${program} --version`);
    }
    return { layout: 'kubeadm', files, versions, versionSources };
  }

  for (const component of ['kube-apiserver', 'kube-controller-manager', 'kubelet'] as const) {
    const path = HARD_WAY_UNITS[component];
    const bytes = await host.read(path);
    if (!bytes) continue;
    files.push({ component, kind: 'systemd-unit', path });
    if (!versions[component]) {
      const program = systemdUnit.readExecStart(bytes)[0];
      if (program) learn(component, await binaryVersion(host, program), `${program} --version`);
    }
  }
  if (files.length === 0) {
    throw new NotDetectedError(
      `no kubeadm files (${manifestPath('kube-apiserver')}, ${KUBEADM_FLAGS_ENV}) and no hard-way units ` +
        `(${Object.values(HARD_WAY_UNITS).join(', ')}) on ${host.name}`,
    );
  }
  return { layout: 'hard-way', files, versions, versionSources };
}

/** "kube-apiserver v1.36.3 (image tag (registry.k8s.io/kube-apiserver:v1.36.3))", for reports. */
export function describeVersion(detection: Detection, component: Component): string {
  const v = detection.versions[component];
  return v
    ? `${component} ${formatVersion(v)} (${detection.versionSources[component]})`
    : `${component} version unknown`;
}
