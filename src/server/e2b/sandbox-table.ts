/**
 * The E2B sandboxes of one server: each is a sandcell session from the
 * registry (so the key's session limits, metrics and idle rules apply) with
 * what E2B adds around it — an unguessable id, the two tokens that sandbox
 * traffic must carry, metadata, environment variables, and a deadline. The
 * control plane finds a sandbox by id within its owner; sandbox traffic, which
 * carries no API key, by id, then checks its token (routes.ts). A sandbox whose deadline passes is
 * killed; one whose session closed for another reason (idle, deleted through
 * /v1, shutdown) is forgotten the next time anyone looks.
 */

import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { NetworkOption } from '../../network/network-option.js';
import type { Owner } from '../core/auth.js';
import type { ManagedSession } from '../core/managed-session.js';
import type { SessionRegistry } from '../core/registry.js';
import { E2bError } from './errors.js';
import { environmentOfTemplate } from './template-environment.js';

export interface E2bSandbox {
  /** E2B's sandbox id: 20 random lower-case letters and digits (about 103 bits). */
  readonly id: string;
  readonly owner: Owner;
  readonly entry: ManagedSession;
  /** Echoed back as created; it chose the environment (template-environment.ts). */
  readonly templateId: string;
  /** Sent back by the SDK as `X-Access-Token` on envd requests and on `/execute`. */
  readonly envdAccessToken: string;
  /** Sent back by the SDK as `E2B-Traffic-Access-Token` on code-interpreter requests. */
  readonly trafficAccessToken: string;
  /** Reach every command and execution of the sandbox (a call's own variables win). */
  readonly envVars: Record<string, string>;
  readonly metadata: Record<string, string>;
  readonly startedAt: Date;
  /** When the sandbox is killed unless its timeout is extended. */
  endAt: Date;
  /** Order of creation, for a stable list. */
  readonly sequence: number;
}

export interface NewSandbox {
  owner: Owner;
  templateId: string;
  timeoutMs: number;
  envVars: Record<string, string>;
  metadata: Record<string, string>;
  /** Absent: the server's default. */
  network?: NetworkOption | undefined;
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const ID_LENGTH = 20;

/** A random id in E2B's style; rejection sampling keeps every character equally likely. */
function newSandboxId(): string {
  let id = '';
  while (id.length < ID_LENGTH) {
    for (const byte of randomBytes(32)) {
      if (byte < 252 && id.length < ID_LENGTH) id += ID_ALPHABET[byte % 36];
    }
  }
  return id;
}

const newToken = (): string => randomBytes(32).toString('hex');

/** Compares a presented token with the expected one without leaking where they differ through timing. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const given = Buffer.from(presented, 'utf8');
  const wanted = Buffer.from(expected, 'utf8');
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

export class SandboxTable {
  private readonly byId = new Map<string, E2bSandbox>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private sequence = 0;

  constructor(private readonly registry: SessionRegistry) {}

  /** A new sandbox on a session from the registry, within the key's limits. */
  async create(request: NewSandbox): Promise<E2bSandbox> {
    const entry = await this.registry.create(request.owner, 'e2b', {
      ...environmentOfTemplate(request.templateId),
      ...(request.network !== undefined ? { network: request.network } : {}),
    });
    const now = Date.now();
    const sandbox: E2bSandbox = {
      id: newSandboxId(),
      owner: request.owner,
      entry,
      templateId: request.templateId,
      envdAccessToken: newToken(),
      trafficAccessToken: newToken(),
      envVars: request.envVars,
      metadata: request.metadata,
      startedAt: new Date(now),
      endAt: new Date(now + request.timeoutMs),
      sequence: this.sequence++,
    };
    this.byId.set(sandbox.id, sandbox);
    this.schedule(sandbox);
    return sandbox;
  }

  /** The owner's live sandbox with this id; another owner's sandbox is not found either. */
  get(owner: Owner, id: string): E2bSandbox {
    const sandbox = this.live(id);
    if (!sandbox || sandbox.owner.id !== owner.id) throw new E2bError(404, `Sandbox ${id} not found.`);
    return sandbox;
  }

  /** The live sandbox with this id, whoever owns it: sandbox traffic then proves its token. */
  find(id: string): E2bSandbox | undefined {
    return this.live(id);
  }

  /** The owner's live sandboxes, oldest first. */
  list(owner: Owner): E2bSandbox[] {
    return [...this.byId.values()]
      .filter((sandbox) => sandbox.owner.id === owner.id && this.live(sandbox.id))
      .sort((first, second) => first.sequence - second.sequence);
  }

  /** Moves the sandbox's deadline to `timeoutMs` from now (shorter or longer, as E2B does). */
  setTimeout(sandbox: E2bSandbox, timeoutMs: number): void {
    sandbox.endAt = new Date(Date.now() + timeoutMs);
    this.schedule(sandbox);
  }

  /** Closes the sandbox's session and forgets it. */
  async kill(sandbox: E2bSandbox, reason = 'deleted'): Promise<void> {
    this.forget(sandbox);
    await this.registry.remove(sandbox.entry, reason);
  }

  private live(id: string): E2bSandbox | undefined {
    const sandbox = this.byId.get(id);
    if (sandbox && (sandbox.entry.session.closed || sandbox.entry.closedAt !== undefined)) {
      this.forget(sandbox);
      return undefined;
    }
    return sandbox;
  }

  private schedule(sandbox: E2bSandbox): void {
    clearTimeout(this.timers.get(sandbox.id));
    // Node's timers hold at most 2^31-1 ms; a longer deadline is checked again when that one fires.
    const delay = Math.min(Math.max(0, sandbox.endAt.getTime() - Date.now()), 2 ** 31 - 1);
    const timer = setTimeout(() => {
      if (sandbox.endAt.getTime() > Date.now()) return this.schedule(sandbox);
      void this.kill(sandbox, 'expired').catch(() => undefined);
    }, delay);
    timer.unref();
    this.timers.set(sandbox.id, timer);
  }

  private forget(sandbox: E2bSandbox): void {
    clearTimeout(this.timers.get(sandbox.id));
    this.timers.delete(sandbox.id);
    this.byId.delete(sandbox.id);
  }
}
