/**
 * The gate: an HTTP forward proxy on the host that is a session's only way to the internet.
 * `startGate` listens on a unix socket or a port and serves exactly one session with one policy,
 * so a sandbox that reaches its own gate can never use another session's allowances.
 *
 * HTTPS is a CONNECT tunnel the gate does not look into: it sees the name and port, not the
 * request. The exception is a host the session has a secret for: the gate ends TLS for it with a
 * certificate from the session's own authority (made here, in memory) and adds the secret to each
 * request (intercept.ts), so the key never enters the sandbox over HTTPS either.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { systemBundlePath } from './certificate-bundle.js';
import { resolveWithSystem } from './destination-check.js';
import { handleForward } from './forward.js';
import { GateBudget, resolveGateLimits } from './gate-budget.js';
import { type GateContext, trackSocket } from './gate-connection.js';
import type { DestinationSecret, Gate, GateLog, StartGateOptions } from './gate-types.js';
import { checkNetworkSecret } from './network-secret.js';
import { GateRefusal, writeRefusal } from './refusal.js';
import { readRequestHead } from './request-head.js';
import { createSessionAuthority } from './session-authority.js';
import { handleConnect } from './tunnel.js';

export type {
  DestinationSecret,
  Gate,
  GateConnectionLog,
  GateLimits,
  GateListen,
  GateLog,
  GateRefusalLog,
  GateResolver,
  GateUsage,
  StartGateOptions,
} from './gate-types.js';

export async function startGate(options: StartGateOptions): Promise<Gate> {
  const limits = resolveGateLimits(options.limits);
  const secrets = secretsByHost(options.secrets ?? []);
  const authority = secrets.size > 0 ? createSessionAuthority(options.sessionId, [...secrets.keys()]) : undefined;
  const context: GateContext = {
    sessionId: options.sessionId,
    policy: options.policy,
    budget: new GateBudget(limits),
    limits,
    resolve: options.resolve ?? resolveWithSystem,
    secrets,
    ...(authority ? { authority } : {}),
    ...(authority ? { upstreamContext: await upstreamContext(options.trustedCertificates) } : {}),
    log: safeLogger(options.logger),
    sockets: new Set(),
    closing: false,
  };
  const server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    // Nothing a connection does may take the process down with it.
    serveConnection(context, client).catch(() => client.destroy());
  });
  await listen(server, options);
  const address = server.address();
  if (address === null) throw new Error('the gate is not listening');
  let closing: Promise<void> | undefined;
  return {
    sessionId: options.sessionId,
    address,
    ...(authority ? { certificateAuthority: authority.certificate } : {}),
    usage: () => context.budget.usage(),
    close() {
      context.closing = true;
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of context.sockets) socket.destroy();
      });
      return closing;
    },
  };
}

function listen(server: Server, options: StartGateOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const ready = () => {
      server.off('error', reject);
      resolve();
    };
    if ('path' in options.listen) server.listen(options.listen.path, ready);
    else server.listen(options.listen.port, options.listen.host, ready);
  });
}

async function serveConnection(context: GateContext, client: Socket): Promise<void> {
  trackSocket(context, client);
  client.on('error', () => {});
  let target: string | undefined;
  if (!context.budget.tryOpen()) {
    refuse(
      context,
      client,
      new GateRefusal(
        429,
        'too-many-connections',
        `this session has ${context.limits.maxConnections} connections open already`,
      ),
    );
    return;
  }
  // Slow clients hold a slot: the head must come within the idle timeout.
  const headTimer = setTimeout(() => client.destroy(), context.limits.idleTimeoutMs);
  try {
    const { head, rest } = await readRequestHead(client, context.limits.maxHeadBytes);
    clearTimeout(headTimer);
    target = head.target;
    if (context.budget.exhausted())
      throw new GateRefusal(429, 'byte-limit', "this session's byte limit through the gate is used up");
    if (head.method === 'CONNECT') await handleConnect(context, client, head, rest);
    else await handleForward(context, client, head, rest);
  } catch (error) {
    if (error instanceof GateRefusal) refuse(context, client, error, target);
    else client.destroy();
  } finally {
    clearTimeout(headTimer);
    context.budget.release();
  }
}

function refuse(context: GateContext, client: Socket, refusal: GateRefusal, target?: string): void {
  context.log({
    event: 'request-refused',
    sessionId: context.sessionId,
    status: refusal.status,
    rule: refusal.rule,
    message: refusal.message,
    ...(target === undefined ? {} : { target: target.slice(0, 300) }),
  });
  writeRefusal(client, refusal);
}

/** The host's system bundle (Debian's path) and Node's own roots, plus the session's trusted PEMs. */
async function upstreamContext(trusted: string | undefined): Promise<SecureContext> {
  const system = await readFile(systemBundlePath('/'), 'utf8').catch(() => '');
  const ca = [...rootCertificates, system, trusted ?? ''].filter((pem) => pem.includes('BEGIN CERTIFICATE'));
  return createSecureContext({ ca, minVersion: 'TLSv1.2' });
}

/** A logger that throws must not end the connection it logs, nor the process. */
function safeLogger(logger: StartGateOptions['logger']): (entry: GateLog) => void {
  if (!logger) return () => {};
  return (entry) => {
    try {
      logger(entry);
    } catch {
      // The log is the caller's; the gate goes on.
    }
  };
}

/** Secrets checked up front (network-secret.ts): a header that could frame or route the request is never one. */
function secretsByHost(secrets: readonly DestinationSecret[]): Map<string, DestinationSecret[]> {
  const byHost = new Map<string, DestinationSecret[]>();
  for (const entry of secrets) {
    const secret = checkNetworkSecret(entry);
    byHost.set(secret.host, [...(byHost.get(secret.host) ?? []), secret]);
  }
  return byHost;
}
