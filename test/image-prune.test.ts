/**
 * `sandcell image prune`: runtime builds of other versions go, this version's stays, and a build
 * something stands on is kept. bubblewrap through the built CLI on a store of the test's own (a real
 * bwrap process standing on an old root filesystem's /usr); Docker through the real engine, on a
 * repository of the test's own so that the machine's own older runtime images are not touched.
 */
import { spawn } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDocker, createDockerBackend } from '../src/backends/docker/index.js';
import { pruneRuntimeImages } from '../src/image/prune.js';
import { runtimeImageTag, runtimeVersion } from '../src/image/recipe.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { runProcess } from './support/process.js';

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'sandcell.js');
const store = mkdtempSync(path.join(os.tmpdir(), 'sandcell-prune-'));
afterAll(() => rmSync(store, { recursive: true, force: true }));

const current = runtimeVersion();
const OLD = 'aaaaaaaaaaaa';
const STOOD_ON = 'bbbbbbbbbbbb';

/** A process that exited: its pid names no live process (until reused, far off). */
async function deadPid(): Promise<number> {
  const child = spawn('true');
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid as number;
}

/** A bwrap process whose /usr is `usr` (with the host's bin and lib bound inside, so sleep runs), as a sandbox's is. */
function standOn(usr: string): { stop(): void } {
  const inside = ['bin', 'lib', 'lib64'].filter((name) => existsSync(`/usr/${name}`));
  for (const name of inside) mkdirSync(path.join(usr, name), { recursive: true });
  const binds = inside.flatMap((name) => ['--ro-bind', `/usr/${name}`, `/usr/${name}`]);
  const child = spawn(
    'bwrap',
    ['--die-with-parent', '--ro-bind', '/', '/', '--ro-bind', usr, '/usr', ...binds, '--', 'sleep', '120'],
    {
      stdio: 'ignore',
    },
  );
  return { stop: () => child.kill('SIGKILL') };
}

async function prune(...args: string[]): Promise<{ pruned: { name: string; removed: boolean; kept?: string }[] }> {
  const result = await runProcess(
    process.execPath,
    [bin, 'image', 'prune', '--backend', 'bubblewrap', '--json', ...args],
    {
      env: { SANDCELL_IMAGE_DIR: store },
    },
  );
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
}

/** Doctor's line about older builds in the test's store, if it has one. */
async function olderBuildsLine(): Promise<{ level: string; title: string } | undefined> {
  const result = await runProcess(process.execPath, [bin, 'doctor', '--backend', 'bubblewrap', '--json'], {
    env: { SANDCELL_IMAGE_DIR: store },
  });
  const report = JSON.parse(result.stdout) as { checks: { level: string; title: string }[] };
  return report.checks.find((check) => check.title.startsWith('runtime builds of earlier'));
}

describe('sandcell image prune, bubblewrap', { timeout: 60_000 }, () => {
  it("removes other versions' root filesystems and dead builds' partials, keeping this version's and one in use", async () => {
    const rootfs = path.join(store, 'rootfs');
    const build = (name: string) => path.join(rootfs, name);
    for (const name of [current, OLD, STOOD_ON]) mkdirSync(path.join(build(name), 'usr'), { recursive: true });
    writeFileSync(path.join(build(OLD), 'usr', 'python3'), 'an old build\n');
    const partial = `cccccccccccc.partial-${await deadPid()}`;
    mkdirSync(path.join(build(partial), 'usr'), { recursive: true });
    mkdirSync(build('not-a-version'));
    // A link under a version's name is not a build of ours: neither it nor what it points at goes.
    const elsewhere = path.join(store, 'elsewhere');
    mkdirSync(elsewhere);
    writeFileSync(path.join(elsewhere, 'keep'), 'kept\n');
    symlinkSync(elsewhere, build('dddddddddddd'));

    const sandbox = standOn(path.join(build(STOOD_ON), 'usr'));
    try {
      // The canary: the process stands on the old /usr before prune looks.
      await expect
        .poll(
          async () => (await prune('--dry-run')).pruned.find((entry) => entry.name === build(STOOD_ON))?.kept ?? '',
          {
            timeout: 10_000,
          },
        )
        .toMatch(/^in use by 1 process/);
      expect(await olderBuildsLine()).toMatchObject({
        level: 'warn',
        title: 'runtime builds of earlier sandcell versions are kept: 2 root filesystem(s)',
      });
      const dry = await prune('--dry-run');
      expect(dry.pruned.filter((entry) => entry.removed).map((entry) => entry.name)).toEqual([
        build(OLD),
        build(partial),
      ]);
      expect(existsSync(build(OLD))).toBe(true);

      const pruned = await prune();
      expect(pruned.pruned.map((entry) => [entry.name, entry.removed])).toEqual([
        [build(OLD), true],
        [build(STOOD_ON), false],
        [build(partial), true],
      ]);
      expect(existsSync(build(OLD))).toBe(false);
      expect(existsSync(build(partial))).toBe(false);
      for (const name of [current, STOOD_ON, 'not-a-version']) expect(existsSync(build(name))).toBe(true);
      expect(lstatSync(build('dddddddddddd')).isSymbolicLink()).toBe(true);
      expect(readFileSync(path.join(elsewhere, 'keep'), 'utf8')).toBe('kept\n');
    } finally {
      sandbox.stop();
    }
    // Once its process is gone, the build goes too.
    await expect
      .poll(async () => (await prune()).pruned.find((entry) => entry.name === build(STOOD_ON))?.removed, {
        timeout: 10_000,
      })
      .toBe(true);
    expect(existsSync(build(STOOD_ON))).toBe(false);
    expect(existsSync(build(current))).toBe(true);
    expect(await olderBuildsLine()).toBeUndefined();
  });

  it('says what it removes in words as it goes, then that nothing is left to remove', async () => {
    const old = path.join(store, 'rootfs', 'eeeeeeeeeeee');
    mkdirSync(path.join(old, 'usr'), { recursive: true });
    const words = async () => {
      const result = await runProcess(process.execPath, [bin, 'image', 'prune', '--backend', 'bubblewrap'], {
        env: { SANDCELL_IMAGE_DIR: store },
      });
      expect(result.code).toBe(0);
      return result.stdout;
    };
    // A size in words: `du` counts the empty directories' own bytes (a few KiB, depending on the file system).
    const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const size = String.raw`[\d.]+ (B|KiB)`;
    expect(await words()).toMatch(
      new RegExp(
        `^removed bubblewrap ${literal(old)} \\(${size}\\)\nFreed up to ${size}; runtime ${literal(current)} is kept\\.\n$`,
      ),
    );
    expect(existsSync(old)).toBe(false);
    expect(await words()).toBe(`Nothing to remove: only runtime ${current} (this version) is built.\n`);
  });
});

const dockerReason = await unavailableReason(createDockerBackend());

describeWhenAvailable('sandcell image prune, docker', 'docker', dockerReason, () => {
  const repository = 'sandcell-prune-test';

  it('untags or removes images of other versions, keeping this version and an image a container uses', async () => {
    const docker = await connectDocker();
    const runtime = docker.getImage(runtimeImageTag());
    const containers: string[] = [];
    try {
      await runtime.tag({ repo: repository, tag: current });
      await runtime.tag({ repo: repository, tag: OLD });
      // Images of their own (a commit makes a new image id): one a container uses, one nothing uses.
      const base = await docker.createContainer({ Image: runtimeImageTag(), Cmd: ['true'] });
      containers.push(base.id);
      await base.commit({ repo: repository, tag: STOOD_ON });
      await base.commit({ repo: repository, tag: 'cccccccccccc' });
      const user = await docker.createContainer({ Image: `${repository}:${STOOD_ON}`, Cmd: ['true'] });
      containers.push(user.id);

      const dry = await pruneRuntimeImages(docker, { repository, dryRun: true });
      expect(dry.map((entry) => [entry.name, entry.removed]).sort()).toEqual([
        [`${repository}:${OLD}`, true],
        [`${repository}:${STOOD_ON}`, false],
        [`${repository}:cccccccccccc`, true],
      ]);
      const pruned = await pruneRuntimeImages(docker, { repository });
      expect(pruned.map((entry) => [entry.name, entry.removed, entry.kept]).sort()).toEqual([
        [`${repository}:${OLD}`, true, undefined],
        [`${repository}:${STOOD_ON}`, false, 'in use by a container'],
        [`${repository}:cccccccccccc`, true, undefined],
      ]);
      // The old tag named the runtime's image, which stays: nothing freed; the committed image is gone whole.
      const freed = Object.fromEntries(pruned.map((entry) => [entry.name, entry.bytes]));
      expect(freed[`${repository}:${OLD}`]).toBe(0);
      expect(freed[`${repository}:cccccccccccc`]).toBeGreaterThan(0);
      const left = (await docker.listImages({ filters: JSON.stringify({ reference: [repository] }) }))
        .flatMap((image) => image.RepoTags ?? [])
        .sort();
      // Sorted both sides: where this version's tag sorts depends on its hash.
      expect(left).toEqual([`${repository}:${current}`, `${repository}:${STOOD_ON}`].sort());
      // The runtime itself is untouched: its tag was another name for the same image.
      expect((await runtime.inspect()).RepoTags).toContain(runtimeImageTag());
    } finally {
      for (const id of containers) await docker.getContainer(id).remove({ force: true });
      for (const tag of [current, OLD, STOOD_ON, 'cccccccccccc']) {
        await docker
          .getImage(`${repository}:${tag}`)
          .remove({ force: true })
          .catch(() => undefined);
      }
    }
  }, 120_000);
});
