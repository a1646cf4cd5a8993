/**
 * `CONNECT host:port`: the HTTPS path. The gate checks the destination, connects to the checked
 * address, answers 200 and then carries opaque bytes both ways. Bytes the client sends before the
 * 200 (a pipelined request, or TLS started early) are refused: what the client meant them for is
 * ambiguous, and an ambiguity is what smuggling uses. A host the session has a secret for is not
 * tunnelled blind: intercept.ts takes over once the destination is checked and connected.
 */
import type { Socket } from 'node:net';
import { type GateContext, trackSocket } from './gate-connection.js';
import { handleIntercept } from './intercept.js';
import { GateRefusal } from './refusal.js';
import { relay } from './relay.js';
import { headerValues, type RequestHead } from './request-head.js';
import { parseAuthority } from './request-target.js';
import { connectChecked } from './upstream-connect.js';

export async function handleConnect(
  context: GateContext,
  client: Socket,
  head: RequestHead,
  rest: Buffer,
): Promise<void> {
  const destination = parseAuthority(head.target);
  if (
    headerValues(head, 'transfer-encoding').length > 0 ||
    headerValues(head, 'content-length').some((value) => value !== '0')
  ) {
    throw new GateRefusal(400, 'smuggling', 'a CONNECT request has no body');
  }
  if (rest.length > 0) {
    throw new GateRefusal(
      400,
      'pipelining',
      'bytes followed CONNECT before the gate answered; wait for 200 before sending',
    );
  }
  let early = 0;
  const onEarly = (chunk: Buffer) => {
    early += chunk.length;
  };
  client.on('data', onEarly);
  client.resume();
  const started = Date.now();
  const { socket: upstream, address } = await connectChecked(context, destination);
  client.off('data', onEarly);
  client.pause();
  if (client.destroyed) {
    upstream.destroy();
    return;
  }
  if (early > 0) {
    upstream.destroy();
    throw new GateRefusal(
      400,
      'pipelining',
      'bytes arrived after CONNECT before the gate answered; wait for 200 before sending',
    );
  }
  if (context.secrets.has(destination.host)) {
    await handleIntercept(context, { client, upstream, address, destination, started });
    return;
  }
  trackSocket(context, upstream);
  client.write('HTTP/1.1 200 Connection established\r\n\r\n');
  const { done } = relay({ client, upstream, budget: context.budget, idleTimeoutMs: context.limits.idleTimeoutMs });
  const result = await done;
  context.log({
    event: 'connection-end',
    sessionId: context.sessionId,
    kind: 'connect',
    host: destination.host,
    port: destination.port,
    address,
    bytesOut: result.bytesOut,
    bytesIn: result.bytesIn,
    durationMs: Date.now() - started,
    outcome: context.closing && result.outcome === 'closed' ? 'gate-closed' : result.outcome,
  });
}
