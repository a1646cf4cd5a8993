/**
 * What a new session runs on (session-resources.ts), on the scripted backend: its id checked
 * before anything is opened, its volume, its channel to a network gate (given as the option a
 * server passes its own through), and what its sandboxes are told of that channel.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type ScriptedBackend, createScriptedBackend as scriptedBackend } from '../backends/scripted/index.js';
import { InvalidInputError } from '../errors.js';
import type { NetworkChannel, NetworkGate } from '../network/gate-channel.js';
import { openSessionResources, sandboxNetwork } from './session-resources.js';

const channel = (socketPath: string, extra: Partial<NetworkChannel> = {}): NetworkChannel => ({
  socketPath,
  close: async () => undefined,
  ...extra,
});

const backends: ScriptedBackend[] = [];
afterEach(async () => {
  await Promise.all(backends.splice(0).flatMap((backend) => backend.volumes.map((volume) => volume.dispose())));
});

function createScriptedBackend(): ScriptedBackend {
  const backend = scriptedBackend();
  backends.push(backend);
  return backend;
}

describe('openSessionResources', () => {
  it('refuses an id that is not 1 to 64 letters, digits, "-" or "_" before it makes a volume', async () => {
    const backend = createScriptedBackend();
    for (const id of ['', 'a b', '../up', 'x'.repeat(65)]) {
      await expect(openSessionResources({ backend, id })).rejects.toBeInstanceOf(InvalidInputError);
    }
    expect(backend.volumes).toHaveLength(0);
  });

  it("makes the session's volume under its id (16 hex digits when none is given), with no network by default", async () => {
    const backend = createScriptedBackend();
    const named = await openSessionResources({ backend, id: 'my_session-1' });
    const unnamed = await openSessionResources({ backend });
    expect(unnamed.id).toMatch(/^[0-9a-f]{16}$/);
    expect(backend.volumes.map((volume) => volume.sessionId)).toEqual(['my_session-1', unnamed.id]);
    expect(named.volume).toBe(backend.volumes[0]);
    expect(named.networkChannel).toBeUndefined();
    expect(named.environment.name).toBe('default');
  });

  it("opens the session's own channel for its allow-list, and gives the volume back when the gate refuses", async () => {
    const backend = createScriptedBackend();
    const asked: { sessionId: string; allow: readonly string[] }[] = [];
    const networkGate: NetworkGate = {
      openChannel: async ({ sessionId, allow }) => {
        asked.push({ sessionId, allow });
        return channel(`/run/gates/${sessionId}.sock`);
      },
    };
    const opened = await openSessionResources({ backend, id: 'online', network: { allow: ['pypi.org'] }, networkGate });
    expect(asked).toEqual([{ sessionId: 'online', allow: ['pypi.org'] }]);
    expect(opened.networkChannel?.socketPath).toBe('/run/gates/online.sock');
    expect(backend.volumes[0]?.disposed).toBe(false);

    const refusing: NetworkGate = {
      openChannel: async () => {
        throw new Error('the gate is down');
      },
    };
    await expect(
      openSessionResources({ backend, id: 'offline', network: { allow: ['pypi.org'] }, networkGate: refusing }),
    ).rejects.toThrow('the gate is down');
    expect(backend.volumes[1]?.sessionId).toBe('offline');
    expect(backend.volumes[1]?.disposed).toBe(true);
  });
});

describe('sandboxNetwork', () => {
  it('tells the sandboxes nothing without a channel', () => {
    expect(sandboxNetwork(undefined, { trustedCertificates: 'PEM' })).toEqual({});
  });

  it("gives the socket, its group, and the session's certificates then the gate's authority, each ending a line", () => {
    expect(sandboxNetwork(channel('/run/gate.sock'), undefined)).toEqual({ network: { socketPath: '/run/gate.sock' } });
    expect(
      sandboxNetwork(channel('/run/gate.sock', { socketGroup: 1234, certificateAuthority: 'GATE\n' }), {
        trustedCertificates: 'MINE',
      }),
    ).toEqual({ network: { socketPath: '/run/gate.sock', socketGroup: 1234, trustedCertificates: 'MINE\nGATE\n' } });
    expect(sandboxNetwork(channel('/run/gate.sock', { certificateAuthority: 'GATE' }), undefined)).toEqual({
      network: { socketPath: '/run/gate.sock', trustedCertificates: 'GATE\n' },
    });
  });
});
