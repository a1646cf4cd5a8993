/**
 * The gateway: a websocket at /gateway speaking v10 JSON without compression (what @discordjs/ws
 * asks for when zlib-sync is absent). HELLO, IDENTIFY (token and intents checked), HEARTBEAT/ACK,
 * READY then one GUILD_CREATE per guild, dispatches filtered by intents, and RESUME: a session
 * outlives its socket, keeps every dispatch by sequence, and replays what the client missed.
 */
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { guildCreatePayload, userPayload } from './payloads.js';
import type { FakeWorld } from './world.js';

export const Intent = {
  guilds: 1 << 0,
  guildMembers: 1 << 1,
  guildPresences: 1 << 8,
  guildMessages: 1 << 9,
  directMessages: 1 << 12,
  messageContent: 1 << 15,
} as const;

const PRIVILEGED_INTENTS = Intent.guildMembers | Intent.guildPresences | Intent.messageContent;
const ALL_INTENTS = (1 << 26) - 1;

const Opcode = {
  dispatch: 0,
  heartbeat: 1,
  identify: 2,
  presenceUpdate: 3,
  resume: 6,
  invalidSession: 9,
  hello: 10,
  heartbeatAck: 11,
} as const;

/** Close codes the client reacts to: 4000 is "unknown error", which @discordjs/ws resumes after. */
export const CloseCode = {
  resumable: 4000,
  unknownOpcode: 4001,
  decodeError: 4002,
  notAuthenticated: 4003,
  authenticationFailed: 4004,
  alreadyAuthenticated: 4005,
  invalidApiVersion: 4012,
  invalidIntents: 4013,
  disallowedIntents: 4014,
} as const;

interface Dispatched {
  s: number;
  t: string;
  d: unknown;
}

interface GatewaySession {
  id: string;
  intents: number;
  sequence: number;
  events: Dispatched[];
  socket: WebSocket | undefined;
}

/** What a dispatch carries: fixed data, or data shaped by the session's intents (undefined: not sent). */
export type DispatchData = unknown | ((intents: number) => unknown);

export interface GatewayOptions {
  token: string;
  world: FakeWorld;
  gatewayUrl: string;
  heartbeatIntervalMs: number;
  /** Privileged intents the fake "developer portal" has switched on for the bot. */
  allowedPrivilegedIntents: number;
  log: (line: string) => void;
  onChange: () => void;
}

export class FakeGateway {
  private readonly server = new WebSocketServer({ noServer: true });
  private session: GatewaySession | undefined;
  /** The TCP connections under the websockets (and upgrades held while silent), to pause and to end. */
  private readonly connections = new Set<Duplex>();
  private silent = false;
  readonly stats = { connections: 0, identifies: 0, resumes: 0, heartbeats: 0 };

  constructor(private readonly options: GatewayOptions) {}

  handleUpgrade(request: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    this.connections.add(socket);
    socket.once('close', () => this.connections.delete(socket));
    if (this.silent) return; // taken, never answered
    this.server.handleUpgrade(request, socket, head, (websocket) => this.accept(websocket, request));
  }

  /**
   * As when the network to Discord goes down: nothing more is read from the bot's connections (its
   * heartbeats and its close frame go unanswered), nothing is sent, and new connections hang.
   */
  silence(): void {
    this.silent = true;
    for (const connection of this.connections) connection.pause();
  }

  get identified(): boolean {
    return this.session !== undefined;
  }

  get connected(): boolean {
    return this.session?.socket !== undefined;
  }

  /** Sends an event to the bot, or keeps it for a RESUME when the socket is down. Required intents: any of. */
  dispatch(type: string, data: DispatchData, requiredIntents = 0): void {
    const session = this.session;
    if (!session) return;
    if (requiredIntents !== 0 && (session.intents & requiredIntents) === 0) return;
    const shaped = typeof data === 'function' ? (data as (intents: number) => unknown)(session.intents) : data;
    if (shaped === undefined) return;
    const event = { s: ++session.sequence, t: type, d: shaped };
    session.events.push(event);
    if (!this.silent) session.socket?.send(JSON.stringify({ op: Opcode.dispatch, ...event }));
    this.options.onChange();
  }

  /** Closes the bot's socket with a resumable code; resolves once it is closed. */
  async drop(): Promise<void> {
    const socket = this.session?.socket;
    if (!socket) throw new Error('fake-discord: the bot has no gateway connection to drop');
    this.session!.socket = undefined;
    await new Promise<void>((resolve) => {
      socket.once('close', () => resolve());
      socket.close(CloseCode.resumable, 'fake-discord: connection dropped');
    });
  }

  close(): void {
    for (const client of this.server.clients) client.terminate();
    for (const connection of this.connections) connection.destroy();
    this.server.close();
  }

  private accept(socket: WebSocket, request: http.IncomingMessage): void {
    this.stats.connections++;
    const query = new URL(request.url ?? '/', 'http://fake-discord.invalid').searchParams;
    if (query.get('v') !== '10') {
      socket.close(CloseCode.invalidApiVersion, 'Invalid API version');
      return;
    }
    if (query.get('encoding') !== 'json' || query.has('compress')) {
      this.options.log(
        `gateway asked for encoding=${query.get('encoding')} compress=${query.get('compress')}; only JSON without compression is faked`,
      );
      socket.close(CloseCode.decodeError, 'Only uncompressed JSON is supported by the fake');
      return;
    }
    let authenticated = false;
    socket.send(
      JSON.stringify({
        op: Opcode.hello,
        d: { heartbeat_interval: this.options.heartbeatIntervalMs },
        s: null,
        t: null,
      }),
    );
    socket.on('close', () => {
      if (this.session?.socket === socket) this.session.socket = undefined;
      this.options.onChange();
    });
    socket.on('message', (raw) => {
      let payload: { op?: number; d?: Record<string, unknown> | number | null };
      try {
        payload = JSON.parse(raw.toString());
      } catch {
        return socket.close(CloseCode.decodeError, 'Decode error');
      }
      if (payload.op === Opcode.heartbeat) {
        this.stats.heartbeats++;
        socket.send(JSON.stringify({ op: Opcode.heartbeatAck, d: null, s: null, t: null }));
        return;
      }
      if (payload.op === Opcode.identify || payload.op === Opcode.resume) {
        if (authenticated) return socket.close(CloseCode.alreadyAuthenticated, 'Already authenticated');
        const data = (payload.d ?? {}) as Record<string, unknown>;
        if (data.token !== this.options.token)
          return socket.close(CloseCode.authenticationFailed, 'Authentication failed');
        authenticated = payload.op === Opcode.identify ? this.identify(socket, data) : this.resume(socket, data);
        return;
      }
      if (!authenticated) return socket.close(CloseCode.notAuthenticated, 'Not authenticated');
      if (payload.op === Opcode.presenceUpdate) return;
      this.options.log(`gateway opcode ${payload.op} is not faked`);
      socket.close(CloseCode.unknownOpcode, 'Unknown opcode');
    });
  }

  private identify(socket: WebSocket, data: Record<string, unknown>): boolean {
    const intents = data.intents;
    if (typeof intents !== 'number' || intents < 0 || intents > ALL_INTENTS) {
      socket.close(CloseCode.invalidIntents, 'Invalid intent(s)');
      return false;
    }
    if ((intents & PRIVILEGED_INTENTS & ~this.options.allowedPrivilegedIntents) !== 0) {
      socket.close(CloseCode.disallowedIntents, 'Disallowed intent(s)');
      return false;
    }
    this.stats.identifies++;
    this.session?.socket?.close(CloseCode.resumable, 'Superseded by a new session');
    const session: GatewaySession = { id: randomBytes(16).toString('hex'), intents, sequence: 0, events: [], socket };
    this.session = session;
    const { world } = this.options;
    this.dispatch('READY', {
      v: 10,
      user: { ...userPayload(world.botUser), verified: true, mfa_enabled: false, flags: 0 },
      guilds: world.guilds().map((guild) => ({ id: guild.id, unavailable: true })),
      session_id: session.id,
      session_type: 'normal',
      resume_gateway_url: this.options.gatewayUrl,
      shard: [0, 1],
      application: { id: world.botUser.id, flags: 0 },
      private_channels: [],
      presences: [],
      relationships: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: [],
      user_settings: {},
      auth: {},
      _trace: ['["fake-discord",{"micros":0}]'],
    });
    for (const guild of world.guilds()) this.dispatch('GUILD_CREATE', guildCreatePayload(world, guild), Intent.guilds);
    return true;
  }

  private resume(socket: WebSocket, data: Record<string, unknown>): boolean {
    const session = this.session;
    if (!session || data.session_id !== session.id || typeof data.seq !== 'number' || data.seq > session.sequence) {
      socket.send(JSON.stringify({ op: Opcode.invalidSession, d: false, s: null, t: null }));
      return false;
    }
    this.stats.resumes++;
    session.socket?.close(CloseCode.resumable, 'Superseded by a resumed connection');
    session.socket = socket;
    for (const event of session.events) {
      if (event.s > data.seq) socket.send(JSON.stringify({ op: Opcode.dispatch, ...event }));
    }
    this.dispatch('RESUMED', { _trace: ['["fake-discord",{"micros":0}]'] });
    return true;
  }
}
