import { describe, expect, it } from 'vitest';
import { isSessionTemplate, templateArguments } from './zygote.js';

const runtime = {
  root: '/run/sandcell',
  etcDirectory: '/run/sandcell/etc',
  kernelDirectory: '/run/sandcell/kernel',
  sessionsDirectory: '/run/sandcell/sessions',
};

describe('the session template’s bwrap arguments', () => {
  it('keeps the template out of a PID namespace of its own, so that its death ends none of its sessions', () => {
    const args = templateArguments({ systemRoot: '/', runtime });
    expect(args).not.toContain('--unshare-pid');
    expect(args).not.toContain('--unshare-all');
    // Root with its capabilities (it makes each session's uid and namespaces), and no network of its own.
    expect(args).toEqual(expect.arrayContaining(['--cap-add', 'ALL', '--unshare-net', '--die-with-parent']));
  });

  it('binds the kernel files where a session has them, and an empty /tmp for what its imports write', () => {
    const args = templateArguments({ systemRoot: '/', runtime }).join(' ');
    expect(args).toContain('--ro-bind /run/sandcell/kernel /opt/sandcell');
    expect(args).toContain('--tmpfs /tmp');
    expect(args).toMatch(/-- \/usr\/bin\/python3 -I -B \/opt\/sandcell\/sandcell_zygote\.py --room-for-/);
  });

  it("runs on an environment's own /usr and /etc, the host's for the rest", () => {
    const args = templateArguments({ systemRoot: '/var/lib/env/rootfs', runtime }).join(' ');
    expect(args).toContain('--ro-bind /var/lib/env/rootfs/usr /usr');
    expect(args).toContain('--ro-bind /var/lib/env/rootfs/etc /etc');
    expect(templateArguments({ systemRoot: '/', runtime }).join(' ')).not.toContain('/usr /usr');
  });
});

describe('isSessionTemplate', () => {
  it("knows a template's command line, and not a forked session's (written over it) or bwrap's", () => {
    const args = templateArguments({ systemRoot: '/', runtime });
    expect(isSessionTemplate(args.slice(args.indexOf('--') + 1))).toBe(true);
    expect(isSessionTemplate(['/usr/bin/python3 -I -B /opt/sandcell/sandcell_kernel.py', ''])).toBe(false);
    expect(isSessionTemplate(['/usr/bin/python3', '-I', '-B', '-S', '/opt/sandcell/sandcell_supervisor.py'])).toBe(
      false,
    );
  });
});
