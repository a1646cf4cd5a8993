import { describe, expect, it } from 'vitest';
import { sandboxEnvironment } from '../sandbox-environment.js';
import { buildBubblewrapArguments, encodeArguments, sandboxFileSources } from './arguments.js';

const runtime = { etcDirectory: '/run/sandcell/etc', kernelDirectory: '/run/sandcell/kernel' };
const files = Object.fromEntries(Object.keys(sandboxFileSources(runtime)).map((target, index) => [target, 5 + index]));
const input = {
  dataDirectory: '/run/sandcell/sessions/1-abc',
  files,
  seccompDescriptor: 3,
  tmpBytes: 1024 * 1024,
  environment: { PATH: '/usr/bin' },
  pythonPath: '/usr/bin/python3',
};

function pairs(args: string[], flag: string): string[][] {
  const found: string[][] = [];
  args.forEach((arg, index) => {
    if (arg === flag) found.push(args.slice(index + 1, index + 3));
  });
  return found;
}

describe('buildBubblewrapArguments', () => {
  const { options: args, command } = buildBubblewrapArguments(input);

  it('unshares every namespace and forbids new user namespaces', () => {
    for (const flag of [
      '--unshare-user',
      '--unshare-pid',
      '--as-pid-1',
      '--unshare-net',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-cgroup',
      '--disable-userns',
      '--new-session',
      '--die-with-parent',
    ]) {
      expect(args).toContain(flag);
    }
    expect(args.join(' ')).toContain('--cap-drop ALL');
    expect(args.join(' ')).toContain('--seccomp 3');
  });

  it('binds the system read-only and only /mnt/data (also at /home/user and /workspace) writable, with a capped /tmp', () => {
    const writable = pairs(args, '--bind');
    expect(writable).toEqual([
      [input.dataDirectory, '/mnt/data'],
      [input.dataDirectory, '/home/user'],
      [input.dataDirectory, '/workspace'],
    ]);
    expect(args.join(' ')).toContain(`--size ${1024 * 1024} --tmpfs /tmp`);
    expect(pairs(args, '--ro-bind')).toContainEqual(['/usr', '/usr']);
    const everything = args.join(' ');
    for (const secret of ['/etc/shadow', '/root', '/home', process.cwd()])
      expect(everything).not.toContain(` ${secret} `);
  });

  it('leaves only the command, with paths inside the sandbox, where the sandbox can read it', () => {
    expect(command).toEqual(['/usr/bin/python3', '-I', '-B', '-S', '/opt/sandcell/sandcell_supervisor.py']);
    expect(encodeArguments(['--tmpfs', '/tmp']).toString()).toBe('--tmpfs\0/tmp\0');
    expect(() => encodeArguments(['--setenv', 'A', 'x\0y'])).toThrow(/NUL/);
  });

  it('copies the synthetic /etc files and the kernel in, hides /proc/cmdline and the host /usr/local', () => {
    const copied = Object.fromEntries(
      [...pairs(args, '--file'), ...pairs(args, '--ro-bind-data')].map(([descriptor, target]) => [
        target,
        Number(descriptor),
      ]),
    );
    expect(copied).toEqual(files);
    // Files of bwrap's own root (read-only at the end) need no mount; only the one over procfs is a bind.
    expect(pairs(args, '--ro-bind-data').map(([, target]) => target)).toEqual(['/proc/cmdline']);
    expect(args.indexOf('--remount-ro', args.lastIndexOf('--file'))).toBeGreaterThan(0);
    expect(args.slice(args.lastIndexOf('--remount-ro'), args.lastIndexOf('--remount-ro') + 2)).toEqual([
      '--remount-ro',
      '/',
    ]);
    expect(sandboxFileSources(runtime)['/proc/cmdline']).toBe('/dev/null');
    expect(sandboxFileSources(runtime)['/etc/passwd']).toBe('/run/sandcell/etc/passwd');
    expect(args.join(' ')).toContain('--tmpfs /usr/local --remount-ro /usr/local');
    for (const directory of Object.values(runtime)) expect(args.join(' ')).not.toContain(directory);
  });

  it('starts from an empty environment', () => {
    expect(args).toContain('--clearenv');
    const environment = sandboxEnvironment({ kernelOptions: {}, threads: 1 });
    expect(Object.keys(environment)).not.toContain('OPENAI_API_KEY');
    expect(environment.HOME).toBe('/tmp');
  });
});

describe('bubblewrap on a runtime root filesystem', () => {
  it('takes /usr and the /etc files from that root, and nothing from the host system', () => {
    const args = buildBubblewrapArguments({ ...input, systemRoot: '/var/lib/sandcell/rootfs/abc' }).options;
    expect(pairs(args, '--ro-bind')).toContainEqual(['/var/lib/sandcell/rootfs/abc/usr', '/usr']);
    for (const [source, target] of pairs(args, '--ro-bind-try')) {
      expect(source).toBe(`/var/lib/sandcell/rootfs/abc${target}`);
    }
    expect(pairs(args, '--ro-bind')).not.toContainEqual(['/usr', '/usr']);
  });

  it('binds no gate socket without network, and the session gate socket alone with it (the net namespace stays unshared)', () => {
    expect(pairs(buildBubblewrapArguments(input).options, '--bind').map(([source]) => source)).not.toContain(
      '/run/gate/session.sock',
    );
    const networked = buildBubblewrapArguments({ ...input, gateSocket: '/run/gate/session.sock' }).options;
    expect(pairs(networked, '--bind')).toContainEqual(['/run/gate/session.sock', '/run/sandcell/gate.sock']);
    expect(networked).toContain('--unshare-net');
    expect(networked).not.toContain('--share-net');
  });

  it("binds the session's ingress socket (its ports' way in) at /run/sandcell/ingress.sock when given one", () => {
    const binds = (options: string[]) => pairs(options, '--bind').filter(([, target]) => target?.startsWith('/run/'));
    expect(binds(buildBubblewrapArguments(input).options)).toEqual([]);
    const served = buildBubblewrapArguments({
      ...input,
      ingressSocket: '/tmp/sandcell-ingress-x/ingress.sock',
    }).options;
    expect(binds(served)).toEqual([['/tmp/sandcell-ingress-x/ingress.sock', '/run/sandcell/ingress.sock']]);
    expect(served).toContain('--unshare-net');
  });
});
