/**
 * The session's ingress socket on its own, with this test in the supervisor's place: a real unix
 * socket, connections made to it as the supervisor's ingress thread makes them (sandcell_ports.py),
 * and as hostile code in the sandbox could.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PortError } from '../errors.js';
import { type IngressChannel, openIngress } from './ingress.js';

const opened: IngressChannel[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((ingress) => ingress.close()));
});

async function ingress(): Promise<IngressChannel> {
  const channel = await openIngress({});
  opened.push(channel);
  return channel;
}

function dial(socketPath: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves once the host ended the connection, with what it sent first. */
function ended(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk;
    });
    socket.once('close', () => resolve(text));
    socket.once('error', () => undefined);
  });
}

function read(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    socket.once('data', (chunk) => resolve(String(chunk)));
    socket.once('error', reject);
    socket.resume();
  });
}

describe('the ingress socket', () => {
  it('hands over the connection that names the token, paused, with the bytes after its line', async () => {
    const channel = await ingress();
    const expected = channel.expect(8000, 2_000);
    expect(expected.token).toMatch(/^[0-9a-f]{32}$/);
    const supervisor = await dial(channel.socketPath);
    supervisor.write(`${expected.token} ok\nBANNER`);
    const socket = await expected.connection;
    expect(socket.isPaused()).toBe(true);
    expect(await read(socket)).toBe('BANNER');
    socket.write('from the host');
    expect(await read(supervisor)).toBe('from the host');
    socket.destroy();
    supervisor.destroy();
  });

  it('turns `closed` and `busy` into typed errors', async () => {
    const channel = await ingress();
    const closed = channel.expect(8001, 2_000);
    const busy = channel.expect(8002, 2_000);
    (await dial(channel.socketPath)).write(`${closed.token} closed\n`);
    (await dial(channel.socketPath)).write(`${busy.token} busy\n`);
    await expect(closed.connection).rejects.toMatchObject({ code: 'port-closed' });
    await expect(busy.connection).rejects.toMatchObject({ code: 'port-busy' });
    await expect(closed.connection).rejects.toBeInstanceOf(PortError);
  });

  it('drops a forged token, a line that is too long or never comes, and keeps waiting for the real one', async () => {
    const channel = await ingress();
    const expected = channel.expect(8003, 5_000);
    const forged = await dial(channel.socketPath);
    const forgedEnd = ended(forged);
    forged.write(`${'0'.repeat(32)} ok\nhostile`);
    const long = await dial(channel.socketPath);
    const longEnd = ended(long);
    long.write('x'.repeat(100));
    const silent = await dial(channel.socketPath);
    const silentEnd = ended(silent);
    // Nothing is handed over for those: the forged line's bytes never reach the host's side.
    expect(await forgedEnd).toBe('');
    expect(await longEnd).toBe('');
    // One that sends nothing is let go after a second (else this test would time out).
    expect(await silentEnd).toBe('');
    const supervisor = await dial(channel.socketPath);
    supervisor.write(`${expected.token} ok\n`);
    const socket = await expected.connection;
    socket.destroy();
    supervisor.destroy();
  });

  it('lets the oldest unidentified connection go for a new one, so held connections cannot keep the real one out', async () => {
    const channel = await ingress();
    const held = await Promise.all(Array.from({ length: 40 }, () => dial(channel.socketPath)));
    const ends = held.map(ended);
    const expected = channel.expect(8004, 2_000);
    const supervisor = await dial(channel.socketPath);
    supervisor.write(`${expected.token} ok\n`);
    const socket = await expected.connection;
    // The oldest nine (40 + the supervisor's - 32) went as the others came.
    await Promise.all(ends.slice(0, 9));
    socket.destroy();
    supervisor.destroy();
    for (const each of held) each.destroy();
  });

  it('a token is used once; an expectation times out, is cancelled, or fails with the channel', async () => {
    const channel = await ingress();
    const once = channel.expect(8005, 2_000);
    const first = await dial(channel.socketPath);
    first.write(`${once.token} ok\n`);
    (await once.connection).destroy();
    const second = await dial(channel.socketPath);
    const secondEnd = ended(second);
    second.write(`${once.token} ok\n`);
    expect(await secondEnd).toBe('');

    await expect(channel.expect(8006, 50).connection).rejects.toMatchObject({ code: 'port-unreachable' });
    const cancelled = channel.expect(8007, 2_000);
    cancelled.cancel();
    await expect(cancelled.connection).rejects.toMatchObject({ code: 'port-unreachable' });

    const pending = channel.expect(8008, 5_000);
    await channel.close();
    await expect(pending.connection).rejects.toMatchObject({ code: 'ports-unavailable' });
    expect(() => channel.expect(8009, 1_000)).toThrow(PortError);
    first.destroy();
  });
});
