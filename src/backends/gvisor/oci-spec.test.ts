import { describe, expect, it } from 'vitest';
import { buildOciSpec, type OciSpecInput } from './oci-spec.js';

const input: OciSpecInput = {
  rootDirectory: '/run/sandcell/gvisor/bundles/x/root',
  systemRoot: '/var/lib/sandcell/rootfs/abc',
  presentEtcFiles: ['ld.so.cache', 'R'],
  files: { '/etc/passwd': '/run/sandcell/gvisor/bundles/x/passwd', '/opt/sandcell': '/run/sandcell/kernel' },
  dataDirectory: '/run/sandcell/sessions/1-s',
  tmpBytes: 1 << 20,
  environment: { PATH: '/usr/bin', A: 'b=c' },
  command: ['/usr/bin/python3', '/opt/sandcell/sandcell_supervisor.py'],
  uid: 1974206464,
  gid: 1974206464,
};

type Spec = {
  process: { user: { uid: number }; env: string[]; capabilities: Record<string, string[]>; noNewPrivileges: boolean };
  root: { readonly: boolean };
  mounts: { destination: string; source: string; options?: string[] }[];
};

describe('the gVisor sandbox spec', () => {
  it('has no capabilities, no new privileges and a read-only root, as the session uid', () => {
    const spec = buildOciSpec(input) as unknown as Spec;
    expect(spec.root.readonly).toBe(true);
    expect(spec.process.noNewPrivileges).toBe(true);
    expect(Object.values(spec.process.capabilities).every((set) => set.length === 0)).toBe(true);
    expect(spec.process.user.uid).toBe(1974206464);
    expect(spec.process.env).toEqual(['PATH=/usr/bin', 'A=b=c']);
  });

  it('binds the system and the kernel read-only; only the session files, /tmp and rw volumes are writable', () => {
    const spec = buildOciSpec({ ...input, mounts: [{ source: '/v', target: '/mnt/volumes/v', readOnly: true }] });
    const mounts = (spec as unknown as Spec).mounts;
    const writable = mounts
      .filter((mount) => !(mount.options ?? []).includes('ro') && !['/proc', '/dev'].includes(mount.destination))
      .map((mount) => mount.destination);
    expect(writable).toEqual(['/tmp', '/mnt/data']);
    const usr = mounts.find((mount) => mount.destination === '/usr');
    expect(usr?.source).toBe('/var/lib/sandcell/rootfs/abc/usr');
    expect(mounts.find((mount) => mount.destination === '/etc/R')?.source).toBe('/var/lib/sandcell/rootfs/abc/etc/R');
    expect(mounts.find((mount) => mount.destination === '/tmp')?.options).toContain('size=1048576');
    expect(mounts.find((mount) => mount.destination === '/mnt/volumes/v')?.options).toContain('ro');
  });

  it('binds the gate and the ingress sockets only when given', () => {
    const without = (buildOciSpec(input) as unknown as Spec).mounts.map((mount) => mount.destination);
    expect(without.some((destination) => destination.endsWith('.sock'))).toBe(false);
    const withBoth = (
      buildOciSpec({ ...input, gateSocket: '/g.sock', ingressSocket: '/i.sock' }) as unknown as Spec
    ).mounts.map((mount) => mount.destination);
    expect(withBoth).toContain('/run/sandcell/gate.sock');
    expect(withBoth).toContain('/run/sandcell/ingress.sock');
  });
});
