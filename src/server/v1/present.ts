/** How sessions, executions and files look on the native /v1 wire. */
import type { FileEntry } from '../../session/files.js';
import type { ManagedSession } from '../core/managed-session.js';
import type { PausedRecord } from '../core/paused-sessions.js';
import type { ServerExecution } from '../core/registry.js';
import { presentResult, sessionFileUrl } from '../http/present-result.js';

export function presentSession(entry: ManagedSession) {
  return {
    id: entry.id,
    state: 'running' as const,
    source: entry.source,
    ...(entry.name !== undefined ? { name: entry.name } : {}),
    environment: entry.session.environment.name,
    createdAt: new Date(entry.createdAt).toISOString(),
    lastActivityAt: new Date(entry.session.lastActivityAt).toISOString(),
    executions: entry.executions,
    busy: entry.session.busy,
    active: entry.session.active,
    ...(entry.restored ? { restored: entry.restored } : {}),
    ...(entry.publishOutputs ? { publishOutputs: true } : {}),
    ...(entry.session.mounts.length > 0 ? { volumes: entry.session.mounts } : {}),
  };
}

/** A paused session: what it was and when it paused; its next request resumes it. */
export function presentPausedSession(record: PausedRecord) {
  return {
    id: record.id,
    state: record.snapshotId === undefined ? ('lost' as const) : ('paused' as const),
    source: record.source,
    ...(record.name !== undefined ? { name: record.name } : {}),
    environment: record.environment,
    pausedAt: record.pausedAt,
    pauseReason: record.reason,
    ...(record.snapshotId !== undefined ? { snapshotId: record.snapshotId } : {}),
    ...(record.lost !== undefined ? { lostReason: record.lost } : {}),
  };
}

export function presentFile(entry: ManagedSession, file: FileEntry) {
  return {
    path: file.path,
    type: file.type,
    size: file.size,
    modifiedAt: new Date(file.modifiedMs).toISOString(),
    ...(file.type === 'file' ? { url: sessionFileUrl(entry, file.path) } : {}),
  };
}

export function presentExecution(
  entry: ManagedSession,
  executionId: string,
  execution: ServerExecution,
  images: 'url' | 'inline',
) {
  return {
    id: executionId,
    sessionId: entry.id,
    status: execution.status,
    stdout: execution.stdout,
    stderr: execution.stderr,
    results: execution.results.map((result) => presentResult(entry, result, images)),
    ...(execution.error ? { error: execution.error } : {}),
    executionCount: execution.executionCount,
    durationMs: execution.durationMs,
    ...(execution.stateLost ? { stateLost: true, stateLostReason: execution.stateLostReason } : {}),
    ...(execution.outputTruncated ? { outputTruncated: true } : {}),
    ...(execution.exitStatus !== undefined ? { exitStatus: execution.exitStatus } : {}),
    ...(execution.files ? { files: execution.files } : {}),
  };
}
