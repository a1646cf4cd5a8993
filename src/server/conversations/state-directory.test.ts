/** Where histories go when nobody says: the environment, the XDG data directory, the home directory; `none` keeps them in memory. */
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveServerOptions } from '../core/options.js';
import { defaultStateDirectory, ownerDigest } from './state-directory.js';

describe('the state directory', () => {
  it('defaults to SANDCELL_STATE_DIR, else $XDG_DATA_HOME/sandcell, else ~/.local/share/sandcell', () => {
    expect(defaultStateDirectory({ SANDCELL_STATE_DIR: 'rel/state', XDG_DATA_HOME: '/data' })).toBe(
      path.resolve('rel/state'),
    );
    expect(defaultStateDirectory({ XDG_DATA_HOME: '/data' })).toBe('/data/sandcell');
    expect(defaultStateDirectory({})).toBe(path.join(os.homedir(), '.local', 'share', 'sandcell'));
    expect(defaultStateDirectory({ SANDCELL_STATE_DIR: 'none' })).toBe(false);
  });

  it('is off in the library unless given (or in the environment), and made absolute', () => {
    expect(resolveServerOptions({}, {}).stateDirectory).toBe(false);
    expect(resolveServerOptions({}, { SANDCELL_STATE_DIR: 'none' }).stateDirectory).toBe(false);
    expect(resolveServerOptions({}, { SANDCELL_STATE_DIR: '/srv/state' }).stateDirectory).toBe('/srv/state');
    expect(resolveServerOptions({ stateDirectory: 'here' }, {}).stateDirectory).toBe(path.resolve('here'));
  });

  it('names a key by a digest of its owner id, never the id itself', () => {
    const digest = ownerDigest('key-0123456789abcdef0123456789abcdef');
    expect(digest).toMatch(/^[0-9a-f]{32}$/);
    expect(digest).not.toContain('0123456789abcdef');
    expect(ownerDigest('local')).not.toBe(digest);
  });
});
