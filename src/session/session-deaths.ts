/**
 * Why a kernel or a sandbox died, in words that say what to do: a protocol
 * violation, the memory limit (and how much of it the files in /mnt/data
 * hold: they are RAM in the same budget and outlive every kernel), or the
 * plain exit.
 */
import type { SandboxExit, SandboxVolume } from '../backends/spec.js';
import { formatBytes } from '../protocol/format-bytes.js';
import type { KernelConnection } from './kernel-connection.js';
import type { LimitNames } from './limit-names.js';
import { describeExit, SANDBOX_CONTENTS_ENDED } from './state-loss.js';

/** An out-of-memory death names the files when they hold at least this share of the memory budget. */
const DATA_SHARE_WORTH_NOTING = 0.25;

export class SessionDeaths {
  constructor(
    private readonly volume: SandboxVolume,
    private readonly memoryBytes: number,
    private readonly names: LimitNames,
  ) {}

  /**
   * Why the whole sandbox died, and that nothing in it lived on: its end is its
   * supervisor's, which takes every context's kernel and every command along.
   */
  async sandboxDeathCause(connection: KernelConnection, exit: SandboxExit): Promise<string> {
    if (connection.violationReason) {
      return `The sandbox broke the wire protocol (${connection.violationReason}; user code may have written to its private channel), so it was killed, ${SANDBOX_CONTENTS_ENDED}.`;
    }
    if (connection.lostReason) {
      return `The sandbox was lost: ${connection.lostReason}, ${SANDBOX_CONTENTS_ENDED}.`;
    }
    if (exit.reason === 'out-of-memory') {
      const dataNote = await this.dataShareNote(DATA_SHARE_WORTH_NOTING);
      return `The sandbox ended, ${SANDBOX_CONTENTS_ENDED}: it was ${describeExit(exit)} (${formatBytes(this.memoryBytes)}); ${dataNote || `use less memory, or ${this.names.memoryBytes}.`}`;
    }
    return `The sandbox ended (${describeExit(exit)}), ${SANDBOX_CONTENTS_ENDED}.`;
  }

  /** Why a kernel died, `description` saying how it ended. */
  async kernelDeathCause(description: string, outOfMemory: boolean): Promise<string> {
    if (outOfMemory) {
      const dataNote = await this.dataShareNote(DATA_SHARE_WORTH_NOTING);
      return `The kernel died: it was ${description} (${formatBytes(this.memoryBytes)}); ${dataNote || `use less memory, or ${this.names.memoryBytes}.`}`;
    }
    return `The kernel died (${description}).`;
  }

  /**
   * Files in /mnt/data are RAM in the session's memory budget and outlive the
   * kernel: when they hold at least `share` of it, say so (empty otherwise).
   */
  async dataShareNote(share: number): Promise<string> {
    const used = await this.volume.usedBytes?.().catch(() => undefined);
    const budget = this.memoryBytes;
    if (used === undefined || used < share * budget || used === 0) return '';
    return `files in /mnt/data use ${formatBytes(used)} of the session's ${formatBytes(budget)} memory budget; remove files, or ${this.names.memoryBytes}.`;
  }
}
