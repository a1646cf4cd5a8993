/**
 * Which sandcell process owns a Docker object, and whether that process is
 * gone: objects carry the owner's host, boot, pid and start time, so a
 * recycled pid or a reboot is not mistaken for a live owner, and objects of
 * other machines sharing the engine are left alone.
 */
import os from 'node:os';
import { ownProcessIdentity, processIsGone } from '../../internal/process-alive.js';
import { OWNER_LABELS } from './container-config.js';

let own: Record<string, string> | undefined;

/** Labels naming this process as the owner. */
export function ownerLabels(): Record<string, string> {
  const identity = ownProcessIdentity();
  own ??= {
    [OWNER_LABELS.host]: os.hostname(),
    [OWNER_LABELS.boot]: identity.boot,
    [OWNER_LABELS.pid]: String(identity.pid),
    [OWNER_LABELS.start]: identity.start,
  };
  return own;
}

/** True when the labels name a sandcell process on this machine that no longer runs. */
export function ownerIsGone(labels: Record<string, string> | undefined): boolean {
  if (!labels) return false;
  if (labels[OWNER_LABELS.host] !== os.hostname()) return false;
  return processIsGone({
    pid: Number(labels[OWNER_LABELS.pid]),
    start: labels[OWNER_LABELS.start] ?? '',
    boot: labels[OWNER_LABELS.boot] ?? '',
  });
}
