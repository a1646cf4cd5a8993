import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../limits.js';
import {
  EXTRA_MASKED_PATHS,
  holderContainerOptions,
  KERNEL_COMMAND,
  type KernelContainerInput,
  kernelContainerOptions,
  MANAGED_LABEL,
  volumeOptions,
} from './container-config.js';
import { ownerIsGone, ownerLabels } from './owner.js';

const labels = { [MANAGED_LABEL]: '1', ...ownerLabels() };
/** A session's leased host uid (from the default range). */
const owner = { uid: 1974206500, gid: 1974206500 };

/** A kernel container's options: the second of a session (default limits, nothing masked), with `extra`. */
function secondKernel(extra: Partial<KernelContainerInput>) {
  return kernelContainerOptions({
    image: 'sandcell-runtime:test',
    name: 'sandcell-kernel-2',
    volumeName: 'sandcell-data-2',
    limits: DEFAULT_LIMITS,
    environment: {},
    labels,
    maskedPaths: [],
    owner,
    ...extra,
  });
}

describe('the kernel container', () => {
  const options = kernelContainerOptions({
    image: 'sandcell-runtime:test',
    name: 'sandcell-kernel-1',
    volumeName: 'sandcell-data-1',
    limits: { ...DEFAULT_LIMITS, memoryBytes: 256 * 2 ** 20, processes: 64, cpus: 0.5, tmpBytes: 2 ** 20 },
    environment: { A: 'b' },
    labels,
    maskedPaths: ['/proc/kcore', '/proc/cmdline'],
    owner,
  });
  const host = options.HostConfig ?? {};

  it('asks the OOM killer to take it first', () => {
    expect(host.OomScoreAdj).toBe(1000);
  });

  it('runs its entrypoint (the supervisor) as the PID namespace’s init, never behind docker-init', () => {
    expect(host.Init).toBe(false);
  });

  it("masks the paths it is given, the host's boot arguments among sandcell's own", () => {
    expect(host.MaskedPaths).toEqual(['/proc/kcore', '/proc/cmdline']);
    expect(EXTRA_MASKED_PATHS).toContain('/proc/cmdline');
  });

  it('has no network, no capabilities, no new privileges, and keeps the engine seccomp profile', () => {
    expect(host.NetworkMode).toBe('none');
    expect(options.NetworkDisabled).toBe(true);
    expect(host.CapDrop).toEqual(['ALL']);
    expect(host.SecurityOpt).toEqual(['no-new-privileges:true']);
    expect(host.Privileged).toBeUndefined();
    // sandcell's own filter is stacked by the entrypoint.
    expect(KERNEL_COMMAND).toContain('--exec');
    expect(options.Entrypoint).toEqual(KERNEL_COMMAND);
  });

  it("is read-only but for size-capped /tmp and the /mnt/data volume, and runs as the session's uid without a TTY", () => {
    expect(host.ReadonlyRootfs).toBe(true);
    expect(host.Tmpfs?.['/tmp']).toContain(`size=${2 ** 20}`);
    expect(host.Tmpfs?.['/tmp']).toContain('nosuid');
    expect(host.ShmSize).toBeGreaterThan(0);
    expect(host.Mounts).toEqual([
      expect.objectContaining({ Type: 'volume', Source: 'sandcell-data-1', Target: '/mnt/data' }),
      expect.objectContaining({ Type: 'volume', Source: 'sandcell-data-1', Target: '/home/user' }),
      expect.objectContaining({ Type: 'volume', Source: 'sandcell-data-1', Target: '/workspace' }),
    ]);
    expect(options.User).toBe('1974206500:1974206500');
    expect(options.Tty).toBe(false);
    expect(options.OpenStdin).toBe(true);
    expect(options.StdinOnce).toBe(true);
  });

  it('carries the limits: memory without swap, processes, CPU', () => {
    expect(host.Memory).toBe(256 * 2 ** 20);
    expect(host.MemorySwap).toBe(host.Memory);
    expect(host.PidsLimit).toBe(64);
    expect(host.NanoCpus).toBe(0.5e9);
  });

  it('passes the environment explicitly and is labelled as sandcell’s', () => {
    expect(options.Env).toEqual(['A=b']);
    expect(options.Labels?.[MANAGED_LABEL]).toBe('1');
    expect(options.Labels?.['org.sandcell.role']).toBe('kernel');
  });
});

describe('the kernel container of a session with internet access', () => {
  const options = secondKernel({
    network: { socketPath: '/tmp/sandcell-gate-x/gate.sock', bundlePath: '/tmp/bundles/abc.pem' },
  });
  const host = options.HostConfig ?? {};

  it("still has no network: only the gate's socket and the CA bundle are bound in", () => {
    expect(host.NetworkMode).toBe('none');
    expect(options.NetworkDisabled).toBe(true);
    const binds = (host.Mounts ?? []).filter((mount) => mount.Type === 'bind');
    expect(binds).toEqual([
      { Type: 'bind', Source: '/tmp/sandcell-gate-x/gate.sock', Target: '/run/sandcell/gate.sock', ReadOnly: false },
      { Type: 'bind', Source: '/tmp/bundles/abc.pem', Target: '/run/sandcell/ca-certificates.crt', ReadOnly: true },
    ]);
    expect(host.GroupAdd).toBeUndefined();
  });

  it("adds the socket's group to the kernel's when the socket could not be given to its uid", () => {
    const grouped = secondKernel({
      network: { socketPath: '/tmp/sandcell-gate-y/gate.sock', bundlePath: '/tmp/bundles/abc.pem', socketGroup: 1000 },
    });
    expect(grouped.HostConfig?.GroupAdd).toEqual(['1000']);
    expect(grouped.User).toBe(`${owner.uid}:${owner.gid}`);
  });
});

describe('the kernel container of a session whose ports are served', () => {
  it('binds the ingress socket at /run/sandcell/ingress.sock, and holds its group once beside the gate’s', () => {
    const served = secondKernel({
      network: { socketPath: '/tmp/sandcell-gate-z/gate.sock', bundlePath: '/tmp/bundles/abc.pem', socketGroup: 1000 },
      ingress: { socketPath: '/tmp/sandcell-ingress-z/ingress.sock', socketGroup: 1000 },
    });
    expect((served.HostConfig?.Mounts ?? []).filter((mount) => mount.Target?.endsWith('ingress.sock'))).toEqual([
      {
        Type: 'bind',
        Source: '/tmp/sandcell-ingress-z/ingress.sock',
        Target: '/run/sandcell/ingress.sock',
        ReadOnly: false,
      },
    ]);
    expect(served.HostConfig?.GroupAdd).toEqual(['1000']);
    expect(served.HostConfig?.NetworkMode).toBe('none');
    const alone = secondKernel({ ingress: { socketPath: '/tmp/sandcell-ingress-w/ingress.sock', socketGroup: 1001 } });
    expect(alone.HostConfig?.GroupAdd).toEqual(['1001']);
  });
});

describe('the data volume and its holder', () => {
  it("is a tmpfs capped at dataBytes, owned by the session's uid", () => {
    const volume = volumeOptions({ name: 'v', dataBytes: 5 * 2 ** 20, labels, owner });
    expect(volume.DriverOpts).toMatchObject({ type: 'tmpfs', device: 'tmpfs' });
    expect(volume.DriverOpts?.o).toContain(`size=${5 * 2 ** 20}`);
    expect(volume.DriverOpts?.o).toContain('uid=1974206500,gid=1974206500');
  });

  it('holds the volume read-only, locked down like the kernel', () => {
    const holder = holderContainerOptions({ image: 'i', name: 'h', volumeName: 'v', labels, owner });
    expect(holder.User).toBe('1974206500:1974206500');
    expect(holder.HostConfig?.NetworkMode).toBe('none');
    expect(holder.HostConfig?.CapDrop).toEqual(['ALL']);
    expect(holder.HostConfig?.Mounts?.[0]?.ReadOnly).toBe(true);
  });
});

describe('owners of Docker objects', () => {
  it('this process is alive; a dead pid, another boot or a recycled pid is gone; another host is not ours to judge', () => {
    const mine = ownerLabels();
    expect(ownerIsGone(mine)).toBe(false);
    expect(ownerIsGone({ ...mine, 'org.sandcell.owner.pid': '999999999' })).toBe(true);
    expect(ownerIsGone({ ...mine, 'org.sandcell.owner.boot': 'another-boot' })).toBe(true);
    expect(ownerIsGone({ ...mine, 'org.sandcell.owner.start': '1' })).toBe(true);
    expect(
      ownerIsGone({ ...mine, 'org.sandcell.owner.host': 'elsewhere', 'org.sandcell.owner.pid': '999999999' }),
    ).toBe(false);
  });
});

describe('the kernel container of an image sandcell did not build', () => {
  const options = secondKernel({
    image: 'sandcell-env-mine:0123456789ab',
    mountedKernel: { directory: '/root/.cache/sandcell/docker-kernel-x', python: '/usr/local/bin/python3' },
  });

  it("binds sandcell's kernel files over /opt/sandcell, read-only", () => {
    expect(options.HostConfig?.Mounts).toContainEqual({
      Type: 'bind',
      Source: '/root/.cache/sandcell/docker-kernel-x',
      Target: '/opt/sandcell',
      ReadOnly: true,
    });
  });

  it("runs them with the image's own python, under the seccomp filter loaded by the standard-library loader", () => {
    expect(options.Entrypoint).toEqual([
      '/usr/local/bin/python3',
      '-I',
      '-B',
      '/opt/sandcell/seccomp_loader.py',
      '/opt/sandcell/seccomp.bpf',
      '/usr/local/bin/python3',
      '-I',
      '-B',
      '-S',
      '/opt/sandcell/sandcell_supervisor.py',
    ]);
  });
});
