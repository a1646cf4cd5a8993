/**
 * sandcell's own container image and deploy/kubernetes (docs/kubernetes.md), on a real Docker
 * Engine: the image is built by the guide's command; the manifests render with `kubectl kustomize`
 * and every object validates against Kubernetes' schemas (kubernetes-models); the security
 * contract runs inside the container under exactly the security settings the StatefulSet gives
 * the pod (test/support/pod-container.ts turns them into `docker run` flags, and the guide's
 * commands must use the same); and the guide's containers run as written: `doctor`, one node
 * serving /v1 and draining on `docker stop`, two nodes sharing a store and forwarding to each other.
 * What the guide's blocks change, and only that: published ports are free ones on 127.0.0.1, and
 * names (containers, network, volume, store directory) are this run's own.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StatefulSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Service } from 'kubernetes-models/v1';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '../src/backends/docker/index.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { containerSettings, type KubernetesObject, renderedManifests, statefulSetOf } from './support/pod-container.js';
import { runProcess } from './support/process.js';
import { commandsOf, freePort, readmeBlock, root, runShell, scratchClone } from './support/readme.js';

/** The schema of each kind the manifests may hold. */
const MODELS: Record<string, new (object: never) => { validate(): void }> = {
  StatefulSet,
  Service,
  PodDisruptionBudget,
  NetworkPolicy,
  HorizontalPodAutoscaler,
};

const objects = renderedManifests();
const statefulSet = statefulSetOf(objects);
const pod = containerSettings(statefulSet);

/** The security flags and volume destinations of the `docker run` in a block of the guide. */
function dockerRunFlags(code: string): { security: string[]; volumes: string[] } {
  const words = code.replace(/\\\n\s*/g, ' ').split(/\s+/);
  const security = words
    .filter((word) => /^--(cap-add|cap-drop|security-opt|user|memory)=|^--(read-only|privileged)$/.test(word))
    .sort();
  const volumes = words
    .filter((word) => word.startsWith('--mount=type=volume'))
    .map((word) => /dst=([^,\s]+)/.exec(word)?.[1] as string)
    .sort();
  return { security, volumes };
}

describe('deploy/kubernetes', () => {
  it('kubernetes-apply: renders with kubectl kustomize, and every object validates against Kubernetes schemas', async () => {
    const [render] = commandsOf(readmeBlock('kubernetes-apply').code);
    expect(render).toMatch(/^kubectl kustomize deploy\/kubernetes\b/);
    const rendered = await runShell(render as string, { cwd: root });
    expect(rendered.code, rendered.stderr).toBe(0);
    expect(rendered.stdout).toContain('kind: StatefulSet');
    expect(objects.map((object) => object.kind).sort()).toEqual([
      'HorizontalPodAutoscaler',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'Service',
      'Service',
      'StatefulSet',
    ]);
    for (const object of objects) {
      const Model = MODELS[object.kind as string];
      expect(Model, object.kind).toBeDefined();
      expect(() => new (Model as NonNullable<typeof Model>)(object as never).validate(), object.kind).not.toThrow();
    }
    // The schemas are enforced: a wrong value is refused.
    const broken = structuredClone(statefulSet);
    broken.spec.template.spec.containers[0].securityContext.procMount = 'Unmasked!';
    expect(() => new StatefulSet(broken as never).validate()).toThrow(/procMount/);
  });

  it('gives the nodes names, peers, probes, a drain and a store, as the cluster needs', () => {
    const spec = statefulSet.spec;
    const podSpec = spec.template.spec;
    const container = podSpec.containers[0];
    const env = Object.fromEntries(
      (container.env as KubernetesObject[]).map((variable) => [variable.name, variable.value ?? variable.valueFrom]),
    );
    const peers = objects.find((object) => object.kind === 'Service' && object.spec.clusterIP === 'None');
    expect(peers?.metadata.name).toBe(spec.serviceName);
    expect(peers?.spec.publishNotReadyAddresses).toBe(true);
    expect(env.SANDCELL_NODE_NAME).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    expect(env.SANDCELL_ADVERTISE_URL).toBe(`http://$(SANDCELL_NODE_NAME).${spec.serviceName}:8080`);
    expect(container.envFrom).toEqual([{ secretRef: { name: 'sandcell' } }]);
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet).toBeUndefined();
    expect(container.lifecycle.preStop).toBeDefined();
    // Longer than the longest execution sandcell allows by default (5 minutes), then the pauses.
    expect(podSpec.terminationGracePeriodSeconds).toBeGreaterThan(300);
    const [first, last] = (env.SANDCELL_UID_RANGE as string).split('-').map(Number);
    expect(first).toBeGreaterThan(0);
    expect(last).toBeLessThan(65534);
    const budget = objects.find((object) => object.kind === 'PodDisruptionBudget');
    expect(budget?.spec.maxUnavailable).toBe(1);
    expect(budget?.spec.selector).toEqual(spec.selector);
    const autoscaler = objects.find((object) => object.kind === 'HorizontalPodAutoscaler');
    expect(autoscaler?.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'sandcell' });
    expect(autoscaler?.spec.metrics[0].pods.metric.name).toBe('sandcell_sessions_capacity_used_ratio');
  });

  it("the guide's docker commands give the container exactly the pod's security settings", () => {
    expect(pod.securityFlags).toContain('--cap-drop=ALL');
    expect(pod.notReproduced).toEqual([
      'hostUsers: false (Docker gives no single container a user namespace of its own)',
    ]);
    const mounts = pod.volumeFlags.map((flag) => flag.replace('--mount=type=volume,dst=', '')).sort();
    for (const id of ['container-doctor', 'container-run', 'container-nodes']) {
      const flags = dockerRunFlags(readmeBlock(id).code);
      expect(flags.security, id).toEqual(pod.securityFlags);
      expect(flags.volumes, id).toEqual(mounts);
    }
  });
});

const reason = await unavailableReason(createDockerBackend());

describeWhenAvailable("sandcell's container image", 'docker', reason, () => {
  const run = `${process.pid}-${randomBytes(3).toString('hex')}`;
  const containers: string[] = [];
  const cleanups: string[] = [];
  let clone: string;

  beforeAll(async () => {
    clone = scratchClone();
    const build = await runShell(readmeBlock('server-image-build').code, { cwd: clone });
    expect(build.code, build.stderr).toBe(0);
    expect(build.stdout).toMatch(/: sandcell:[0-9a-f]{12} \(also tagged sandcell:latest\)/);
  }, 1_200_000);

  afterAll(async () => {
    for (const name of containers) await runProcess('docker', ['rm', '-f', '-v', name]);
    for (const command of cleanups) await runShell(command, { cwd: root });
    rmSync(clone, { recursive: true, force: true });
  });

  it("passes the security contract inside, under the pod's security settings", async () => {
    const name = `sandcell-contract-${run}`;
    containers.push(name);
    const env = Object.entries(pod.env).flatMap(([key, value]) => ['-e', `${key}=${value}`]);
    const result = await runProcess(
      'docker',
      [
        'run',
        `--name=${name}`,
        ...pod.securityFlags,
        ...pod.volumeFlags,
        ...env,
        '-v',
        `${root}:/src:ro`,
        '-w',
        '/src',
        'sandcell:latest',
        '/usr/local/lib/sandcell/bin/node',
        'node_modules/vitest/vitest.mjs',
        'run',
        '--configLoader',
        'runner',
        '--config',
        'test/container/vitest.config.ts',
      ],
      { cwd: root },
    );
    const output = result.stdout + result.stderr;
    expect(result.code, output.slice(-4000)).toBe(0);
    const passed = Number(/Tests\s+(\d+) passed \((\d+)\)/.exec(output)?.[1]);
    expect(passed).toBeGreaterThanOrEqual(40);
    expect(output).not.toMatch(/\d+ failed|skipped/);
    expect(output).toContain("security contract: bubblewrap in sandcell's container");
  }, 900_000);

  it('container-doctor: every sandbox feature works in the container', async () => {
    const result = await runShell(readmeBlock('container-doctor').code, { cwd: root });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    for (const line of [
      '✓ user namespaces: bwrap can create a sandbox',
      '✓ each session runs as its own unprivileged host uid',
      '✓ memory budget per session',
      '✓ /mnt/data: a size-capped tmpfs per session',
      '✓ sandbox network: blocked',
      '✓ language R: available',
    ]) {
      expect(result.stdout).toContain(line);
    }
  }, 120_000);

  it('container-run: one node serves /v1; `docker stop` drains it, and the next container on its volume resumes the session', async () => {
    const port = await freePort();
    const name = `sandcell-one-${run}`;
    const volume = `sandcell-state-${run}`;
    containers.push(name);
    cleanups.push(`docker volume rm -f ${volume}`);
    const code = readmeBlock('container-run')
      .code.replace('--name sandcell ', `--name ${name} `)
      .replace('-p 8080:8080', `-p 127.0.0.1:${port}:8080`)
      .replace('src=sandcell-state,', `src=${volume},`)
      .replaceAll('localhost:8080', `localhost:${port}`);
    const result = await runShell(code, { cwd: root });
    expect(result.code, result.stderr).toBe(0);
    const execution = JSON.parse(result.stdout.trim().split('\n').pop() as string);
    expect(execution.status).toBe('ok');
    expect(execution.stdout).toBe('42\n');
    const url = `http://127.0.0.1:${port}`;
    const headers = { authorization: 'Bearer change-me', 'content-type': 'application/json' };
    const metrics = await fetch(`${url}/metrics`, { headers });
    expect(await metrics.text()).toMatch(/^sandcell_sessions_capacity_used_ratio /m);
    const session = execution.sessionId as string;
    const set = await fetch(`${url}/v1/sessions/${session}/executions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ code: 'x = 6 * 7' }),
    });
    expect(set.status).toBe(200);
    const stopped = await runProcess('docker', ['stop', '-t', '60', name]);
    expect(stopped.code).toBe(0);
    const state = await runProcess('docker', ['inspect', '-f', '{{.State.ExitCode}}', name]);
    expect(state.stdout.trim()).toBe('0');
    // The next container on the volume resumes the session the drain paused, variables and all.
    await runProcess('docker', ['rm', '-v', name]);
    const [again] = commandsOf(code);
    expect(again).toMatch(/^docker run -d /);
    const restarted = await runShell(again as string, { cwd: root });
    expect(restarted.code, restarted.stderr).toBe(0);
    const deadline = Date.now() + 90_000;
    while (
      !(await fetch(`${url}/readyz`).then(
        (response) => response.ok,
        () => false,
      ))
    ) {
      if (Date.now() > deadline) throw new Error('the second container never became ready');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const resumed = await fetch(`${url}/v1/sessions/${session}/executions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ code: 'print(x)' }),
    });
    expect(((await resumed.json()) as { stdout: string }).stdout).toBe('42\n');
  }, 300_000);

  it('container-nodes: two nodes share a store; a session made through one is used through the other', async () => {
    const store = mkdtempSync(path.join(os.tmpdir(), 'sandcell-container-store-'));
    const prefix = `sandcell-${run}`;
    for (const node of ['a', 'b']) containers.push(`${prefix}-${node}`);
    cleanups.push(`docker network rm ${prefix}-net`, `rm -rf ${store}`);
    const code = readmeBlock('container-nodes')
      .code.replaceAll('sandcell-net', `${prefix}-net`)
      .replaceAll('/tmp/sandcell-store', store)
      .replaceAll('sandcell-$node', `${prefix}-$node`);
    const started = await runShell(code, { cwd: root });
    expect(started.code, started.stderr).toBe(0);
    const address = async (node: string) => {
      const inspected = await runProcess('docker', [
        'inspect',
        '-f',
        '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}',
        `${prefix}-${node}`,
      ]);
      return `http://${inspected.stdout.trim()}:8080`;
    };
    const [a, b] = [await address('a'), await address('b')];
    const headers = { authorization: 'Bearer change-me', 'content-type': 'application/json' };
    for (const [node, url] of [
      ['a', a],
      ['b', b],
    ]) {
      const running = await runProcess('docker', ['inspect', '-f', '{{.State.Running}}', `${prefix}-${node}`]);
      if (running.stdout.trim() !== 'true') {
        const logs = await runProcess('docker', ['logs', `${prefix}-${node}`]);
        throw new Error(`node ${node} stopped: ${(logs.stdout + logs.stderr).slice(-2000)}`);
      }
      const deadline = Date.now() + 90_000;
      while (
        !(await fetch(`${url}/readyz`).then(
          (response) => response.ok,
          () => false,
        ))
      ) {
        if (Date.now() > deadline) throw new Error(`${url} never became ready`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    const session = (await (await fetch(`${a}/v1/sessions`, { method: 'POST', headers })).json()) as { id: string };
    // Its id names node a (eight hex digits of its name's hash): node b forwards to it.
    expect(session.id.slice(0, 8)).toBe(createHash('sha256').update('a').digest('hex').slice(0, 8));
    const first = await fetch(`${b}/v1/sessions/${session.id}/executions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ code: 'x = 6 * 7\nprint(x)' }),
    });
    expect(((await first.json()) as { stdout: string }).stdout).toBe('42\n');
    // Node a holds it: b forwarded, and a second request through b finds the same variables.
    const second = (await (
      await fetch(`${b}/v1/sessions/${session.id}/executions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ code: 'print(x + 1)' }),
      })
    ).json()) as { stdout: string };
    expect(second.stdout).toBe('43\n');
    const listed = await (await fetch(`${b}/v1/sessions`, { headers })).json();
    expect(JSON.stringify(listed)).toContain(session.id);
  }, 300_000);
});
