/** What admission lets in once a session is held: its queue, the code's size, the key's rate, and nothing in a shutdown. */
import { describe, expect, it } from 'vitest';
import type { SessionPool } from '../../session/pool.js';
import type { ManagedSession } from './managed-session.js';
import { Metrics } from './metrics.js';
import { RateLimiter } from './rate-limiter.js';
import { Admission } from './session-admission.js';

function admission(options: { perMinute?: number; shuttingDown?: () => boolean } = {}) {
  const metrics = new Metrics();
  const admitted = new Admission({
    // Admitting work into a held session never asks the pool for one.
    pool: undefined as unknown as SessionPool,
    metrics,
    rateLimiter: new RateLimiter(options.perMinute ?? 0),
    maxSessions: 10,
    sessionsPerOwner: 5,
    maxCodeBytes: 16,
    maxQueuedExecutions: 1,
    held: () => 0,
    heldBy: () => 0,
    shuttingDown: options.shuttingDown ?? (() => false),
  });
  return { admitted, metrics };
}

const entry = (inFlight: number) => ({ owner: { id: 'owner-a', label: 'a' }, inFlight }) as ManagedSession;

describe('Admission', () => {
  it('refuses code over the size, past the queue and past the key’s rate, each counted by its reason', () => {
    const { admitted, metrics } = admission({ perMinute: 2 });
    expect(() => admitted.admit(entry(0), 'x'.repeat(17))).toThrow(expect.objectContaining({ limit: 'code-bytes' }));
    // One runs, one waits: a third is refused.
    expect(() => admitted.admit(entry(2), '1')).toThrow(expect.objectContaining({ limit: 'queued-executions' }));
    admitted.admit(entry(0), '1');
    admitted.admitWork(entry(0));
    expect(() => admitted.admitWork(entry(0))).toThrow(/minute|rate/i);
    const text = metrics.render();
    for (const reason of ['code-too-large', 'queue-full', 'executions-per-minute'])
      expect(text).toContain(`reason="${reason}"`);
  });

  it('lets nothing in while the server shuts down', () => {
    let stopping = false;
    const { admitted } = admission({ shuttingDown: () => stopping });
    admitted.admit(entry(0), '1');
    stopping = true;
    expect(() => admitted.admit(entry(0), '1')).toThrow(expect.objectContaining({ code: 'shutting-down' }));
    expect(() => admitted.admitWork(entry(0))).toThrow(expect.objectContaining({ code: 'shutting-down' }));
  });
});
