/**
 * createServer(): the HTTP server on Node (Hono's adapter) with its pool
 * warmed before it accepts connections, and a graceful close: stop accepting,
 * let running executions finish (bounded), close every sandbox.
 *
 * Requests for a port a sandbox serves (`PORT-ID.DOMAIN`, or E2B's headers) go
 * to the port door (ports/), before anything else sees them. Hono does not see
 * upgrades: an app's WebSocket and Jupyter's channels websocket are the doors
 * that take them, and any other upgrade is answered as the plain HTTP request
 * it also is. Background commands are not waited for on close (they may be meant
 * to run forever): they end with their sandboxes. createServer leaves the
 * embedding process's OOM score alone; `sandcell serve` and `sandcell mcp`
 * lower their own.
 */
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { isolatedBackend } from '../environments/select.js';
import { isLoopback, type ResolvedServerOptions, resolveServerOptions, type ServerOptions } from './core/options.js';
import { createRuntime } from './core/runtime.js';
import { createApp } from './http/app.js';
import { ConnectionLimiter } from './http/connection-limiter.js';
import { Forwarder } from './http/forwarding.js';
import { answerUpgradeAsHttp, createRequestListener } from './http/request-listener.js';
import { jupyterChannels } from './jupyter/channels-socket.js';
import { claimedPorts } from './ports/port-address.js';
import { PortDoor } from './ports/port-door.js';
import { terminalUpgrades } from './terminals/terminal-upgrades.js';

/**
 * How long a stopping server waits for the requests it still answers before it cuts their connections. A
 * cluster node keeps taking requests until its sessions are paused, and sends them on to the peers that
 * resume those sessions: such a run can still be under way here, and on a loaded machine it took longer
 * than the 2 s this once was (a client behind HAProxy saw its connection cut mid-answer).
 */
const CONNECTIONS_DRAIN_MS = 10_000;
/** How long a client may keep a connection idle for its next request (Node's own default), as every answer says. */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/**
 * How much longer the server keeps an idle connection open than it said. A
 * client reuses a connection until the time it was told (minus a margin, or
 * its own shorter limit); were the server to close it on the dot, a client
 * running late (a busy machine) sends its next request as the connection
 * closes, and a POST lost that way is not retried: `fetch failed`, ECONNRESET.
 * Idle connections stay bounded by the connection caps, idle ones closed first.
 */
const KEEP_ALIVE_GRACE_MS = 10_000;
/**
 * The whole request (headers and body) must arrive within this; the answer is not
 * limited by it, so streamed executions run their full time. A 64 MiB upload needs
 * about 2 Mbit/s to make it.
 */
const REQUEST_TIMEOUT_MS = 300_000;
/** How often Node looks for connections past the header or request timeout. */
const MAX_CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

export interface SandcellServer {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** The options in force, defaults filled in. */
  readonly options: ResolvedServerOptions;
  /** The server's log (pino): a caller's lines go beside the server's own. */
  readonly logger: Logger;
  /** Graceful: stops accepting, waits for running executions (up to the shutdown grace), closes every sandbox. */
  close(): Promise<void>;
  /** Not graceful (a second Ctrl-C): closes every sandbox now, cutting what runs in them. */
  closeSandboxes(): Promise<void>;
  /** Resolves once what the server keeps on disk (conversation histories) is written. */
  flushed(): Promise<void>;
}

function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export async function createServer(options: ServerOptions = {}): Promise<SandcellServer> {
  const resolved = resolveServerOptions(options);
  const context = createRuntime(resolved);
  const { logger } = context;
  const connections = new ConnectionLimiter({
    maxConnections: resolved.maxConnections,
    maxConnectionsPerAddress: resolved.maxConnectionsPerAddress,
    onShed: (reason) => context.metrics.rejected.inc({ reason }),
  });
  const { app, mcp, jupyter, e2bSandboxes } = createApp(context, { connections });
  const ports = new PortDoor({ server: context, sandboxes: e2bSandboxes });
  try {
    if (resolved.stateDirectory !== false) await context.conversations.keepOnDisk(resolved.stateDirectory);
    // A store named for paused sessions is proven before the first session: wrong credentials fail here, not at a pause.
    if (resolved.store !== undefined)
      logger.info({ store: await context.registry.checkStore() }, 'paused sessions are kept in the store');
    if (resolved.publishOutputs) await context.registry.checkLinks();
    // Keys whose sessions run on gVisor: a host that cannot run it fails here, saying why, not at their first session.
    if (resolved.gvisorKeys.length > 0) {
      await isolatedBackend('gvisor').ensureAvailable();
      logger.info({ keys: resolved.gvisorKeys }, 'sessions of these keys run on gVisor');
    }
    await context.pool.start();
  } catch (error) {
    // A server that does not start leaves nothing running: the sandboxes its backend began to
    // prepare (a template) would keep the process alive after it said why it stopped.
    await context.pool.close();
    throw error;
  }
  // Node would announce the keep-alive timeout it enforces; every answer announces the shorter one.
  const { cluster } = context;
  const forwarder =
    cluster &&
    new Forwarder({
      cluster,
      registry: context.registry,
      apiKeys: context.apiKeys,
      logger,
      connections: mcp,
      conversations: context.conversations,
    });
  const listener = createRequestListener(app, {
    logger,
    keepAliveHint: `timeout=${KEEP_ALIVE_TIMEOUT_MS / 1000}`,
    ...(forwarder ? { forwarder } : {}),
    ports,
  });
  const httpServer = createHttpServer(
    {
      // A connection that never completes its request header is closed (slow-header floods).
      headersTimeout: resolved.headersTimeoutMs,
      requestTimeout: Math.max(REQUEST_TIMEOUT_MS, resolved.headersTimeoutMs),
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS + KEEP_ALIVE_GRACE_MS,
      connectionsCheckingInterval: Math.min(MAX_CONNECTIONS_CHECKING_INTERVAL_MS, resolved.headersTimeoutMs),
    },
    listener,
  );
  connections.attach(httpServer);
  const channels = jupyterChannels(context, jupyter, connections);
  const terminals = terminalUpgrades(context, jupyter, connections);
  // Hono does not see upgrades: Jupyter's channels and the terminals' sockets are the front doors that take them.
  httpServer.on('upgrade', (request, socket, head) => {
    /** Answers the upgrade with `here`, or, in a cluster, on the node that holds what it is for. */
    const upgrade = (here: () => void) => {
      if (!forwarder) return here();
      void forwarder
        .target(request)
        .catch(() => undefined)
        .then((peer) => {
          if (peer) return forwarder.upgrade(request, socket, head, peer);
          socket.once('close', () => void forwarder.done(request));
          here();
        });
    };
    const address = ports.claims(request);
    if (address) {
      claimedPorts.set(request, address);
      upgrade(() => void ports.upgrade(request, socket, head, address).catch(() => socket.destroy()));
    } else if (channels.matches(request)) upgrade(() => channels.upgrade(request, socket, head));
    else if (terminals.matches(request)) upgrade(() => terminals.upgrade(request, socket, head));
    else answerUpgradeAsHttp(request, socket, listener);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      httpServer.once('error', reject);
      httpServer.listen(resolved.port, resolved.host, () => {
        httpServer.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await context.pool.close();
    throw error;
  }
  const port = (httpServer.address() as AddressInfo).port;
  if (cluster) {
    // Listening first: a peer may forward here as soon as it reads this node's record.
    try {
      await cluster.start();
    } catch (error) {
      httpServer.close();
      await context.pool.close();
      throw error;
    }
    logger.info({ node: cluster.node, tag: cluster.tag, advertised: cluster.url }, 'a node of the cluster');
    if (resolved.sandboxDomain === undefined) {
      logger.warn(
        "no --sandbox-domain: the sandboxes' ports are served as PORT-ID.localhost:PORT of each node's own port, which clients of the cluster's one address do not reach; give every node the domain they use",
      );
    }
  }
  const url = `http://${urlHost(resolved.host)}:${port}`;
  logger.info(
    {
      url,
      apiKeys: context.apiKeys.enabled ? resolved.apiKeys.length : 0,
      poolSize: resolved.poolSize,
      poolMax: resolved.poolMax,
      maxSessions: resolved.maxSessions,
    },
    context.apiKeys.enabled
      ? `sandcell listening on ${url}`
      : `sandcell listening on ${url} without API keys: only this machine can connect (set SANDCELL_API_KEYS to serve others)`,
  );
  if (!context.apiKeys.enabled && !isLoopback(resolved.host)) throw new Error('unreachable: checked by options');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      context.registry.beginDrain();
      if (resolved.drainDelayMs > 0) {
        // Serving as before, while /readyz says 503: a load balancer's health check takes this node
        // out of rotation before connections are refused.
        logger.info({ drainDelayMs: resolved.drainDelayMs }, 'draining: /readyz answers 503');
        await new Promise((resolve) => setTimeout(resolve, resolved.drainDelayMs));
      }
      // A node of a cluster takes requests until its sessions are paused: it sends new sessions, and those
      // it has paused, to peers, which would otherwise find its sessions neither here nor paused.
      let connectionsClosed = Promise.resolve();
      const stopAccepting = () => {
        logger.info('shutting down: no new connections');
        connectionsClosed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
        httpServer.closeIdleConnections();
      };
      if (!cluster) stopAccepting();
      await context.registry.shutdown(resolved.shutdownGraceMs);
      if (cluster) {
        // Its sessions paused, its conversations go to the store too: whichever node is asked for one takes it up.
        await context.conversations.handOver();
        await cluster
          .stop()
          .catch((error: Error) => logger.warn({ error: error.message }, 'could not leave the cluster'));
        stopAccepting();
      }
      context.conversations.shutdown();
      await context.conversations.flushed();
      // Its sessions closed or paused, no sandbox mounts a volume: the keys' images are unmounted.
      await context.volumes?.close();
      await mcp.close();
      channels.close();
      terminals.close();
      jupyter.terminals.closeAll();
      // Answers still on their way, and runs sent on to peers: wait for them (bounded), then cut.
      const idle = setInterval(() => httpServer.closeIdleConnections(), 50);
      let cutAfter: NodeJS.Timeout | undefined;
      await Promise.race([
        connectionsClosed,
        new Promise((resolve) => (cutAfter = setTimeout(resolve, CONNECTIONS_DRAIN_MS))),
      ]);
      // The bound must not outlive the wait: a pending timer would keep the process from exiting.
      clearTimeout(cutAfter);
      clearInterval(idle);
      httpServer.closeAllConnections();
      forwarder?.close();
      logger.info('stopped');
      logger.flush();
    })();
    return closing;
  };

  return {
    url,
    host: resolved.host,
    port,
    options: resolved,
    logger,
    close,
    closeSandboxes: () => context.pool.close(),
    flushed: () => context.conversations.flushed(),
  };
}
