/**
 * Bait on the host for the security contract's probes: a secret file in the
 * host user's home and a listener on the host's loopback. A probe that reads
 * the one or reaches the other shows a hole; both are removed afterwards.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface HostSecret {
  /** A fresh directory under the host user's home. */
  directory: string;
  /** `token.txt` in it, holding `text`. */
  file: string;
  text: string;
}

/** Runs `probe` with a secret file in the host user's home, removed when it ends. */
export async function withHostSecret<T>(probe: (secret: HostSecret) => Promise<T>): Promise<T> {
  const directory = mkdtempSync(path.join(os.homedir(), '.sandcell-secret-'));
  const text = `secret-${randomBytes(8).toString('hex')}`;
  const file = path.join(directory, 'token.txt');
  writeFileSync(file, text);
  try {
    return await probe({ directory, file, text });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * Runs `probe` with a listener on the host's 127.0.0.1 (its port given) that answers
 * `host-secret`, and gives how many connections reached it meanwhile.
 */
export async function connectionsDuring(probe: (port: number) => Promise<void>): Promise<number> {
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    socket.end('host-secret');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await probe((server.address() as { port: number }).port);
    return connections;
  } finally {
    server.close();
  }
}
