/**
 * What an E2B sandbox is to the server: its row (the session under its id, with what E2B adds
 * around it: the two tokens its traffic carries, metadata, environment variables, a deadline and
 * a lifecycle), how a row is kept with its session across a pause (sandbox-keep.ts) and read back,
 * and its ids and tokens. The sandboxes of one server are sandbox-table.ts's.
 */

import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { NetworkOption } from '../../network/network-option.js';
import type { VolumeMount } from '../../session/options.js';
import type { SnapshotInfo } from '../../session/session-state.js';
import type { SessionLostError } from '../../snapshots/snapshot-errors.js';
import type { Owner } from '../core/auth.js';
import type { ManagedSession } from '../core/managed-session.js';
import { E2bError } from './errors.js';
import { type Lifecycle, PUBLIC_TRAFFIC, type SandboxKeep, type TrafficPolicy } from './sandbox-keep.js';

export interface SandboxRow {
  /** E2B's sandbox id, and its session's id in the registry. */
  readonly id: string;
  readonly owner: Owner;
  /** Its session while this server holds one (possibly closed since: see the table's `state`). */
  entry?: ManagedSession;
  /** Echoed back as created; it chose the environment (template-environment.ts) or the snapshot it started from. */
  readonly templateId: string;
  /** Sent back by the SDK as `X-Access-Token` on envd requests and on `/execute`. */
  readonly envdAccessToken: string;
  /** Sent back by the SDK as `E2B-Traffic-Access-Token` on code-interpreter requests. */
  readonly trafficAccessToken: string;
  /** Reach every command and execution of the sandbox (a call's own variables win). */
  readonly envVars: Record<string, string>;
  readonly metadata: Record<string, string>;
  /** When it was created (ms, unique within a server): with its id, where it stands in the list. */
  readonly order: number;
  startedAt: Date;
  /** When the sandbox is killed (or paused) unless its timeout is extended. */
  endAt: Date;
  /** The timeout it was created with: what a resume by its own traffic gives it. */
  readonly timeoutMs: number;
  readonly lifecycle: Lifecycle;
  /** Who may reach the ports it serves, and how (src/server/ports/). */
  readonly traffic: TrafficPolicy;
  /** Set while it is paused as its clients see it. */
  pausedAt?: Date;
  /** Set when its record says its state is gone (its server stopped without pausing it): its traffic is told so. */
  lost?: SessionLostError;
}

/** A running sandbox: what sandbox traffic is served with. */
export interface E2bSandbox extends SandboxRow {
  entry: ManagedSession;
}

export type SandboxState = 'running' | 'dormant' | 'paused';

export interface NewSandbox {
  owner: Owner;
  templateId: string;
  timeoutMs: number;
  envVars: Record<string, string>;
  metadata: Record<string, string>;
  lifecycle: Lifecycle;
  traffic: TrafficPolicy;
  /** Absent: the server's default. */
  network?: NetworkOption | undefined;
  /** The snapshot it starts from (its `templateId` named one of the key's snapshots). */
  snapshot?: SnapshotInfo;
  /** The key's volumes to mount. */
  mounts?: VolumeMount[];
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const ID_LENGTH = 20;
/**
 * What a sandbox's `keep` may weigh: it is written into its paused record, which the registry reads
 * back only up to 64 KiB (paused-sessions.ts).
 */
export const MAX_KEEP_BYTES = 56 * 1024;

/** A random id in E2B's style; rejection sampling keeps every character equally likely. */
export function newSandboxId(): string {
  let id = '';
  while (id.length < ID_LENGTH) {
    for (const byte of randomBytes(32)) {
      if (byte < 252 && id.length < ID_LENGTH) id += ID_ALPHABET[byte % 36];
    }
  }
  return id;
}

export const newToken = (): string => randomBytes(32).toString('hex');

/** Compares a presented token with the expected one without leaking where they differ through timing. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const given = Buffer.from(presented, 'utf8');
  const wanted = Buffer.from(expected, 'utf8');
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

export const notFound = (id: string): E2bError => new E2bError(404, `Sandbox ${id} not found.`);

export function keepOf(row: SandboxRow): SandboxKeep {
  return {
    e2b: 1,
    templateId: row.templateId,
    envdAccessToken: row.envdAccessToken,
    trafficAccessToken: row.trafficAccessToken,
    envVars: row.envVars,
    metadata: row.metadata,
    order: row.order,
    startedAt: row.startedAt.getTime(),
    endAt: row.endAt.getTime(),
    timeoutMs: row.timeoutMs,
    lifecycle: row.lifecycle,
    traffic: row.traffic,
    ...(row.pausedAt ? { pausedAt: row.pausedAt.getTime() } : {}),
  };
}

export function rowOfKeep(owner: Owner, id: string, keep: SandboxKeep, entry?: ManagedSession): SandboxRow {
  return {
    id,
    owner,
    ...(entry ? { entry } : {}),
    templateId: keep.templateId,
    envdAccessToken: keep.envdAccessToken,
    trafficAccessToken: keep.trafficAccessToken,
    envVars: keep.envVars,
    metadata: keep.metadata,
    order: keep.order,
    startedAt: new Date(keep.startedAt),
    endAt: new Date(keep.endAt),
    timeoutMs: keep.timeoutMs,
    lifecycle: keep.lifecycle,
    traffic: keep.traffic ?? PUBLIC_TRAFFIC,
    ...(keep.pausedAt !== undefined ? { pausedAt: new Date(keep.pausedAt) } : {}),
  };
}

/** A sandbox whose data would not fit its paused record is refused at creation, not lost at its first pause. */
export function refuseLargeKeep(row: SandboxRow): void {
  const bytes = Buffer.byteLength(JSON.stringify(keepOf(row)), 'utf8');
  if (bytes > MAX_KEEP_BYTES) {
    throw new E2bError(
      400,
      `metadata and envVars together take ${bytes} bytes; a sandbox here keeps at most ${MAX_KEEP_BYTES} (they are kept with it when it pauses).`,
    );
  }
}
