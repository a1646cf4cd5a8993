/**
 * A session's allowance through its gate: how many connections are open and how many bytes have
 * gone each way, against the limits. Bytes are counted over the gate's whole life (the session's),
 * so closing and reopening connections does not reset them.
 */
import { InvalidInputError } from '../errors.js';
import type { GateLimits, GateUsage } from './gate-types.js';

export const DEFAULT_GATE_LIMITS: Required<GateLimits> = {
  maxConnections: 32,
  maxBytesOut: 1024 ** 3,
  maxBytesIn: 8 * 1024 ** 3,
  idleTimeoutMs: 60_000,
  connectTimeoutMs: 10_000,
  maxHeadBytes: 16 * 1024,
};

export function resolveGateLimits(limits: GateLimits = {}): Required<GateLimits> {
  const resolved = { ...DEFAULT_GATE_LIMITS };
  for (const [name, value] of Object.entries(limits) as Array<[keyof GateLimits, number | undefined]>) {
    if (value === undefined) continue;
    if (!(name in DEFAULT_GATE_LIMITS)) throw new InvalidInputError(`Unknown gate limit ${JSON.stringify(name)}.`);
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new InvalidInputError(`The gate limit ${name} must be a positive whole number; got ${value}.`);
    }
    resolved[name] = value;
  }
  return resolved;
}

export class GateBudget {
  private open = 0;
  private bytesOut = 0;
  private bytesIn = 0;

  constructor(readonly limits: Required<GateLimits>) {}

  /** Takes a connection slot; false when all are in use. */
  tryOpen(): boolean {
    if (this.open >= this.limits.maxConnections) return false;
    this.open++;
    return true;
  }

  release(): void {
    this.open--;
  }

  exhausted(): boolean {
    return this.bytesOut >= this.limits.maxBytesOut || this.bytesIn >= this.limits.maxBytesIn;
  }

  /** Counts bytes going `direction`; false when that goes over the limit (the connection must end). */
  spend(direction: 'out' | 'in', bytes: number): boolean {
    if (direction === 'out') {
      this.bytesOut += bytes;
      return this.bytesOut <= this.limits.maxBytesOut;
    }
    this.bytesIn += bytes;
    return this.bytesIn <= this.limits.maxBytesIn;
  }

  usage(): GateUsage {
    return { openConnections: this.open, bytesOut: this.bytesOut, bytesIn: this.bytesIn };
  }
}
