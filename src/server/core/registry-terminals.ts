/**
 * The server's one path for terminals in a managed session: every door that
 * opens one (E2B's PTY, Jupyter's terminals, /v1's terminal socket, the web
 * UI) comes through here, so each gets the same admission (shutdown, the key's
 * rate) and the same bound per key, beside the session's own (`maxTerminals`).
 * A terminal is code execution: the doors check the key as for an execution.
 */

import type { TerminalOptions } from '../../session/terminal.js';
import type { TerminalHandle } from '../../session/terminals.js';
import { LimitExceededError } from './errors.js';
import type { ManagedSession } from './managed-session.js';
import type { Metrics } from './metrics.js';

/** Terminals one key may hold open across its sessions. */
export const MAX_TERMINALS_PER_KEY = 32;

export interface RegistryTerminalsHost {
  metrics: Metrics;
  /** Refuses new work during shutdown and past the key's rate. */
  admitWork(entry: ManagedSession): void;
}

export class RegistryTerminals {
  private readonly byOwner = new Map<string, number>();

  constructor(private readonly host: RegistryTerminalsHost) {
    host.metrics.gauge('sandcell_terminals_open', 'Terminals open now, through every door.', () => [
      { labels: {}, value: [...this.byOwner.values()].reduce((sum, count) => sum + count, 0) },
    ]);
  }

  /** Opens a terminal in `entry`'s session, within the key's bound. */
  async open(entry: ManagedSession, options: TerminalOptions): Promise<TerminalHandle> {
    this.host.admitWork(entry);
    const owner = entry.owner.id;
    const held = this.byOwner.get(owner) ?? 0;
    if (held >= MAX_TERMINALS_PER_KEY) {
      this.host.metrics.rejected.inc({ reason: 'terminals-per-key' });
      throw new LimitExceededError(
        'terminals-per-key',
        `This key holds ${held} terminals open, the most it may; close one first.`,
      );
    }
    this.byOwner.set(owner, held + 1);
    const release = () => {
      const count = (this.byOwner.get(owner) ?? 1) - 1;
      if (count > 0) this.byOwner.set(owner, count);
      else this.byOwner.delete(owner);
    };
    let terminal: TerminalHandle;
    try {
      terminal = await entry.session.terminals.open(options);
    } catch (error) {
      release();
      throw error;
    }
    void terminal.ended.finally(release);
    return terminal;
  }
}
