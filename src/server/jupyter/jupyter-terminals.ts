/**
 * Jupyter Server's terminals (`/api/terminals`, and the websocket in
 * terminal-upgrades.ts): each terminal is a shell in a sandbox of its own, a
 * session of the key that opened it (counted against `--sessions-per-key`),
 * whose id is the terminal's name, so a cluster routes a terminal's requests
 * by it as it routes a kernel's. The session ends with its terminal (an
 * `exit`, a DELETE); a terminal nobody is attached to lets its session idle,
 * and the idle close or pause ends it, saying so on the socket. A name asked
 * for in a POST is not taken: the server names terminals, and the answer says
 * which name it chose (JupyterLab uses the answer's).
 */
import type { TerminalHandle } from '../../session/terminals.js';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import type { ManagedSession } from '../core/managed-session.js';
import { JupyterHttpError } from './jupyter-errors.js';

export interface JupyterTerminal {
  name: string;
  owner: Owner;
  entry: ManagedSession;
  terminal: TerminalHandle;
  lastActivity: Date;
}

export class JupyterTerminals {
  private readonly terminals = new Map<string, JupyterTerminal>();

  constructor(private readonly server: ServerContext) {}

  async create(owner: Owner, cwd: unknown): Promise<JupyterTerminal> {
    if (cwd !== undefined && cwd !== null && typeof cwd !== 'string') {
      throw new JupyterHttpError(400, '`cwd` must be a path.');
    }
    const { registry } = this.server;
    const entry = await registry.create(owner, 'jupyter-terminal');
    let terminal: TerminalHandle;
    try {
      terminal = await registry.terminals.open(entry, {
        cols: 80,
        rows: 24,
        ...(typeof cwd === 'string' && cwd !== '' ? { cwd } : {}),
      });
    } catch (error) {
      await registry.remove(entry, 'terminal-failed').catch(() => undefined);
      throw error;
    }
    const record: JupyterTerminal = { name: entry.id, owner, entry, terminal, lastActivity: new Date() };
    this.terminals.set(record.name, record);
    void terminal.ended.then(async () => {
      this.terminals.delete(record.name);
      // Its sandbox was its alone: gone with it, paused or not.
      if (registry.find(owner, entry.id)) await registry.remove(entry, 'terminal-ended').catch(() => undefined);
      await registry.pauses.remove(owner, entry.id).catch(() => undefined);
    });
    return record;
  }

  list(owner: Owner): JupyterTerminal[] {
    return [...this.terminals.values()].filter((terminal) => terminal.owner.id === owner.id);
  }

  /** The key's terminal `name`; another key's is not found, as a missing one. */
  get(owner: Owner, name: string): JupyterTerminal {
    const terminal = this.terminals.get(name);
    if (!terminal || terminal.owner.id !== owner.id)
      throw new JupyterHttpError(404, `No terminal ${JSON.stringify(name.slice(0, 80))}.`);
    return terminal;
  }

  async remove(owner: Owner, name: string): Promise<void> {
    const record = this.get(owner, name);
    await record.terminal.close();
  }

  /** Every terminal ends (the server is shutting down). */
  closeAll(): void {
    for (const record of this.terminals.values()) void record.terminal.close();
  }
}

export const presentTerminal = (terminal: JupyterTerminal) => ({
  name: terminal.name,
  last_activity: terminal.lastActivity.toISOString(),
});
