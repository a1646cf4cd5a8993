import { describe, expect, it } from 'vitest';
import { runtimeDockerfile } from './docker-image.js';
import { runtimeImageTag, runtimeVersion, sandboxPackages } from './recipe.js';

describe('the runtime recipe', () => {
  it('has a content version, used as the image tag', () => {
    expect(runtimeVersion()).toMatch(/^[0-9a-f]{12}$/);
    expect(runtimeImageTag()).toBe(`sandcell-runtime:${runtimeVersion()}`);
  });

  it('installs the same Debian packages as the set-up command, with python3-seccomp for the stacked filter', () => {
    expect(sandboxPackages()).toEqual(
      expect.arrayContaining(['python3', 'python3-ipython', 'python3-pandas', 'python3-seccomp']),
    );
  });

  it('the Dockerfile route installs those packages and the kernel, and leaves the accounts to the kernel', () => {
    const dockerfile = runtimeDockerfile();
    expect(dockerfile).toMatch(/^FROM debian:bookworm-slim\n/);
    for (const pkg of sandboxPackages()) expect(dockerfile).toContain(` ${pkg}`);
    expect(dockerfile).toContain('ln -sf /tmp/.sandcell/passwd /etc/passwd && ln -sf /tmp/.sandcell/group /etc/group');
    expect(dockerfile).toMatch(/COPY (sandcell_\w+\.(py|mjs|R) )+seccomp_filter\.py \/opt\/sandcell\//);
    for (const name of ['sandcell_supervisor.py', 'sandcell_kernel.py', 'sandcell_files.py'])
      expect(dockerfile).toContain(` ${name} `);
    expect(dockerfile).toContain(`org.sandcell.runtime-version=${runtimeVersion()}`);
  });
});
