/**
 * A session as the server holds it: the library's session with its owner, the
 * front door that made it, and the server's bookkeeping. A leaf, so the
 * registry and what it hands sessions to can all name it.
 */
import type { CommandHandle } from '../../session/command.js';
import type { Session } from '../../session/session.js';
import type { Owner } from './auth.js';
import type { ImageStore } from './image-store.js';

export type SessionSource = 'v1' | 'azure' | 'mcp' | 'conversation' | 'e2b' | 'jupyter';

export interface ManagedSession {
  /** The session's id, chosen by the server. */
  readonly id: string;
  readonly owner: Owner;
  readonly source: SessionSource;
  /** The client's name for it: an Azure identifier or an MCP session name. */
  readonly name?: string;
  /** Names are unique within a scope: `azure`, or one MCP connection. */
  readonly scope?: string;
  readonly session: Session;
  readonly createdAt: number;
  readonly images: ImageStore;
  executions: number;
  /** Background commands started through the server, by pid, until they end: their stdin stays open. */
  readonly backgroundCommands: Map<number, CommandHandle>;
  /** Executions in `execute()` now: the running one and those queued behind it. */
  inFlight: number;
  /** When and why the server let go of the session (idle, deleted, shutdown, closed). */
  closedAt?: number;
  closedReason?: string;
}
