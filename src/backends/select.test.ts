import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { AutoBackend, createBackend, defaultBackendName, getDefaultBackend, resolveBackend } from './select.js';

describe('choosing a backend by name', () => {
  it('knows bubblewrap, docker and auto', () => {
    expect(createBackend('bubblewrap').name).toBe('bubblewrap');
    expect(createBackend('docker').name).toBe('docker');
    const auto = createBackend('auto');
    expect(auto).toBeInstanceOf(AutoBackend);
    // Until it has chosen, it says so.
    expect(auto.name).toBe('auto');
  });

  it('refuses an unknown name with the list of known ones', () => {
    expect(() => createBackend('podman')).toThrow(InvalidInputError);
    expect(() => createBackend('podman')).toThrow(/bubblewrap, docker, gvisor, auto/);
  });
});

describe('resolveBackend: the one place a name becomes a backend', () => {
  it('takes SANDCELL_BACKEND when no name is given, else bubblewrap', () => {
    expect(defaultBackendName({})).toBe('bubblewrap');
    expect(defaultBackendName({ SANDCELL_BACKEND: '' })).toBe('bubblewrap');
    expect(defaultBackendName({ SANDCELL_BACKEND: 'docker' })).toBe('docker');
  });

  it('shares one backend per name in the process, and passes an instance through', () => {
    const docker = resolveBackend('docker');
    expect(resolveBackend('docker')).toBe(docker);
    expect(docker.name).toBe('docker');
    expect(resolveBackend(docker)).toBe(docker);
    expect(resolveBackend()).toBe(resolveBackend(defaultBackendName()));
    expect(getDefaultBackend()).toBe(resolveBackend());
  });

  it('makes a new backend when given options (a --rootfs), and refuses an unknown name', () => {
    const withRootfs = resolveBackend('bubblewrap', { bubblewrap: { rootfs: '/nonexistent' } });
    expect(withRootfs).not.toBe(resolveBackend('bubblewrap'));
    expect(resolveBackend('auto', {})).toBeInstanceOf(AutoBackend);
    expect(() => resolveBackend('podman')).toThrow(InvalidInputError);
  });
});
