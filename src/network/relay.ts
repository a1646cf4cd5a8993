/**
 * Carries bytes both ways between the sandbox's connection and the destination until either side
 * ends, counting them against the session's budget and ending the pair when it goes idle or a
 * limit is reached. Backpressure is kept: a slow reader pauses the other side.
 */
import type { Socket } from 'node:net';
import type { GateBudget } from './gate-budget.js';
import type { GateConnectionLog } from './gate-types.js';

export interface RelayOptions {
  client: Socket;
  upstream: Socket;
  budget: GateBudget;
  idleTimeoutMs: number;
  /** Bytes the client may send after the head (a plain-HTTP body); more is a pipelined request. */
  clientBytesAllowed?: number;
}

export interface RelayResult {
  bytesOut: number;
  bytesIn: number;
  outcome: GateConnectionLog['outcome'];
}

export function relay(options: RelayOptions): {
  done: Promise<RelayResult>;
  end: (outcome: RelayResult['outcome']) => void;
} {
  const { client, upstream, budget, idleTimeoutMs, clientBytesAllowed } = options;
  let bytesOut = 0;
  let bytesIn = 0;
  let settle: (result: RelayResult) => void = () => {};
  const done = new Promise<RelayResult>((resolve) => {
    settle = resolve;
  });
  let finished = false;
  const closed = new Set<Socket>();
  /** Settles once; an outcome other than `closed` cuts both sockets off at once. */
  const end = (outcome: RelayResult['outcome']) => {
    if (finished) return;
    finished = true;
    clearTimeout(idleTimer);
    if (outcome !== 'closed') {
      client.destroy();
      upstream.destroy();
    }
    settle({ bytesOut, bytesIn, outcome });
  };
  let idleTimer = setTimeout(() => end('idle-timeout'), idleTimeoutMs);
  const touched = () => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => end('idle-timeout'), idleTimeoutMs);
  };

  const carry = (from: Socket, to: Socket, direction: 'out' | 'in') => {
    from.on('data', (chunk: Buffer) => {
      touched();
      if (direction === 'out') {
        bytesOut += chunk.length;
        if (clientBytesAllowed !== undefined && bytesOut > clientBytesAllowed) return end('client-error');
      } else {
        bytesIn += chunk.length;
      }
      if (!budget.spend(direction, chunk.length)) return end('byte-limit');
      // The other side already finished: nothing more can be delivered to it.
      if (!to.writable) return;
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => from.resume());
      }
    });
    // A half-close is passed on (a client may finish its upload and still read the answer); the
    // pair is done when both sockets have closed, after what was written has been flushed.
    from.on('end', () => to.end());
    from.on('close', () => {
      closed.add(from);
      if (closed.size === 2) end('closed');
      else if (to.writable) to.end();
    });
    from.on('error', () => end(direction === 'out' ? 'client-error' : 'upstream-error'));
    from.resume();
  };
  carry(client, upstream, 'out');
  carry(upstream, client, 'in');
  return { done, end };
}
