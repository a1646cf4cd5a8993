import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bootId, processStartTime } from '../internal/process-alive.js';
import { acquireBuildLock, buildingProcess, buildLockFile } from './build-lock.js';
import { removeEnvironmentFromStore } from './store.js';

let store: string;
beforeEach(async () => {
  store = await mkdtemp(path.join(os.tmpdir(), 'sandcell-build-lock-'));
});
afterEach(async () => {
  await rm(store, { recursive: true, force: true });
});

describe('the build lock of an environment name', () => {
  it('is a file naming this process while held, and gone once released', async () => {
    const lock = await acquireBuildLock({ store, name: 'ml' });
    const owner = JSON.parse(await readFile(buildLockFile(store, 'ml'), 'utf8'));
    expect(owner.pid).toBe(process.pid);
    await lock.release();
    await expect(readFile(buildLockFile(store, 'ml'))).rejects.toThrow(/ENOENT/);
  });

  it('makes a second build wait while the owner lives, and lets it go on when the owner dies', async () => {
    const owner = spawn('sleep', ['300'], { stdio: 'ignore' });
    const pid = owner.pid as number;
    const ownerExited = new Promise((resolve) => owner.once('exit', resolve));
    await writeFile(buildLockFile(store, 'ml'), JSON.stringify({ pid, start: processStartTime(pid), boot: bootId() }));
    let waitingFor: number | undefined;
    let told: () => void = () => undefined;
    const waiting = new Promise<void>((resolve) => {
      told = resolve;
    });
    let acquired = false;
    const acquiring = acquireBuildLock({
      store,
      name: 'ml',
      onWait: (ownerPid) => {
        waitingFor = ownerPid;
        told();
      },
    }).then((lock) => {
      acquired = true;
      return lock;
    });
    await waiting;
    expect(waitingFor).toBe(pid);
    expect(acquired).toBe(false);
    owner.kill('SIGKILL');
    await ownerExited;
    const lock = await acquiring;
    expect(JSON.parse(await readFile(buildLockFile(store, 'ml'), 'utf8')).pid).toBe(process.pid);
    await lock.release();
  });

  it('takes over a lock left by a process that is gone, or a half-written one', async () => {
    await writeFile(buildLockFile(store, 'a'), JSON.stringify({ pid: 2 ** 22 + 7, start: '1', boot: bootId() }));
    await writeFile(buildLockFile(store, 'b'), '{"pid": 12');
    let waited = false;
    const first = await acquireBuildLock({ store, name: 'a', onWait: () => (waited = true) });
    const second = await acquireBuildLock({ store, name: 'b', onWait: () => (waited = true) });
    expect(waited).toBe(false);
    await first.release();
    await second.release();
  });

  it('locks names apart: building one does not hold up another', async () => {
    const one = await acquireBuildLock({ store, name: 'one' });
    const two = await acquireBuildLock({ store, name: 'two', onWait: () => expect.fail('waited') });
    await one.release();
    await two.release();
  });

  it('env remove refuses while the name is being built, and says by which process', async () => {
    await mkdir(path.join(store, 'ml'));
    const lock = await acquireBuildLock({ store, name: 'ml' });
    expect(await buildingProcess(store, 'ml')).toBe(process.pid);
    await expect(removeEnvironmentFromStore(store, 'ml')).rejects.toThrow(
      `The environment ml is being built (process ${process.pid})`,
    );
    await lock.release();
    expect(await buildingProcess(store, 'ml')).toBeUndefined();
    await expect(removeEnvironmentFromStore(store, 'ml')).resolves.toEqual([]);
  });
});
