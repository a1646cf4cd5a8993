/**
 * deploy/kubernetes as the tests read it: the objects `kubectl kustomize` renders, and the
 * sandcell container of the StatefulSet's pod turned into `docker run` flags that give a
 * container the same security settings. A setting this does not know how to give a container
 * is an error, so the manifests cannot gain one the container test did not run under.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { root } from './readme.js';

export const deployDirectory = path.join(root, 'deploy', 'kubernetes');

// biome-ignore lint/suspicious/noExplicitAny: rendered YAML, checked against Kubernetes' schemas by the test.
export type KubernetesObject = Record<string, any>;

/** What `kubectl kustomize deploy/kubernetes` renders, as objects. */
export function renderedManifests(): KubernetesObject[] {
  const text = execFileSync('kubectl', ['kustomize', deployDirectory], { encoding: 'utf8' });
  return parseAllDocuments(text).map((document) => document.toJS() as KubernetesObject);
}

export function statefulSetOf(objects: KubernetesObject[]): KubernetesObject {
  const found = objects.filter((object) => object.kind === 'StatefulSet');
  if (found.length !== 1) throw new Error(`expected one StatefulSet, rendered ${found.length}`);
  return found[0] as KubernetesObject;
}

/** The pod's settings that a container test can and cannot reproduce with Docker. */
export interface ContainerSettings {
  /** `docker run` flags for the security context, the volumes and the memory limit, sorted. */
  securityFlags: string[];
  volumeFlags: string[];
  /** Plain env values of the container (not those from the downward API or a Secret). */
  env: Record<string, string>;
  /** What Docker cannot give one container, and the pod has: said, not silently dropped. */
  notReproduced: string[];
}

const CAPABILITY = /^[A-Z_]+$/;

/** The sandcell container of the StatefulSet's pod, as `docker run` flags. */
export function containerSettings(statefulSet: KubernetesObject): ContainerSettings {
  const pod = statefulSet.spec.template.spec as KubernetesObject;
  const container = (pod.containers as KubernetesObject[]).find((candidate) => candidate.name === 'sandcell');
  if (!container) throw new Error('the pod has no container named sandcell');
  const notReproduced: string[] = [];
  const security: string[] = [];
  const unknown = (where: string, key: string) => {
    throw new Error(
      `${where}.${key}: a setting the container test does not reproduce; teach test/support/pod-container.ts`,
    );
  };
  if (pod.securityContext) {
    for (const key of Object.keys(pod.securityContext)) unknown('pod.securityContext', key);
  }
  for (const [key, value] of Object.entries(pod)) {
    if (key === 'hostUsers') {
      if (value !== false) throw new Error('the pod must run in its own user namespace (hostUsers: false)');
      notReproduced.push('hostUsers: false (Docker gives no single container a user namespace of its own)');
    } else if (['hostNetwork', 'hostPID', 'hostIPC', 'shareProcessNamespace'].includes(key) && value === true) {
      unknown('pod', key);
    }
  }
  const context = (container.securityContext ?? {}) as KubernetesObject;
  const user = context.runAsUser;
  const group = context.runAsGroup;
  for (const [key, value] of Object.entries(context)) {
    switch (key) {
      case 'runAsUser':
      case 'runAsGroup':
        break;
      case 'runAsNonRoot':
        if (value === true && user === 0) throw new Error('runAsNonRoot with runAsUser 0');
        break;
      case 'privileged':
        if (value) security.push('--privileged');
        break;
      case 'allowPrivilegeEscalation':
        if (!value) security.push('--security-opt=no-new-privileges');
        break;
      case 'readOnlyRootFilesystem':
        if (value) security.push('--read-only');
        break;
      case 'procMount':
        if (value === 'Unmasked') security.push('--security-opt=systempaths=unconfined');
        else if (value !== 'Default') unknown('securityContext.procMount', String(value));
        break;
      case 'capabilities':
        for (const name of (value.drop ?? []) as string[]) {
          if (!CAPABILITY.test(name)) throw new Error(`capability ${name}`);
          security.push(`--cap-drop=${name}`);
        }
        for (const name of (value.add ?? []) as string[]) {
          if (!CAPABILITY.test(name)) throw new Error(`capability ${name}`);
          security.push(`--cap-add=${name}`);
        }
        break;
      case 'seccompProfile':
        if (value.type === 'Localhost') {
          const profile = path.join(deployDirectory, value.localhostProfile);
          if (!existsSync(profile)) throw new Error(`the seccomp profile ${profile} is not in deploy/kubernetes`);
          security.push(`--security-opt=seccomp=${path.relative(root, profile)}`);
        } else if (value.type === 'Unconfined') security.push('--security-opt=seccomp=unconfined');
        else if (value.type !== 'RuntimeDefault') unknown('securityContext.seccompProfile', String(value.type));
        break;
      case 'appArmorProfile':
        if (value.type === 'Unconfined') security.push('--security-opt=apparmor=unconfined');
        else if (value.type !== 'RuntimeDefault') unknown('securityContext.appArmorProfile', String(value.type));
        break;
      default:
        unknown('securityContext', key);
    }
  }
  if (user !== undefined) security.push(`--user=${user}${group === undefined ? '' : `:${group}`}`);
  const memory = container.resources?.limits?.memory as string | undefined;
  if (memory) security.push(`--memory=${dockerBytes(memory)}`);

  // Every mount of the container: emptyDirs and claims alike become a volume of the container's own.
  const volumeFlags = ((container.volumeMounts ?? []) as KubernetesObject[]).map((mount) => {
    if (mount.readOnly || mount.subPath) unknown('volumeMounts', mount.name);
    return `--mount=type=volume,dst=${mount.mountPath}`;
  });
  const env: Record<string, string> = {};
  for (const variable of (container.env ?? []) as KubernetesObject[]) {
    if (typeof variable.value === 'string') env[variable.name] = variable.value;
  }
  return { securityFlags: security.sort(), volumeFlags, env, notReproduced };
}

/** Kubernetes quantities (8Gi, 512Mi) as Docker's (8g, 512m). */
function dockerBytes(quantity: string): string {
  const match = /^(\d+)(Ki|Mi|Gi)$/.exec(quantity);
  if (!match) throw new Error(`a memory limit the test does not read: ${quantity}`);
  return `${match[1]}${{ Ki: 'k', Mi: 'm', Gi: 'g' }[match[2] as 'Ki' | 'Mi' | 'Gi']}`;
}
