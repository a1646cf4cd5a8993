import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { AutoBackend, createBackend } from './select.js';

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
    expect(() => createBackend('podman')).toThrow(/bubblewrap, docker, auto/);
  });
});
