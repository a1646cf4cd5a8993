/**
 * E2B's control plane under /e2b (requests without `E2b-Sandbox-Port`):
 * create (`POST /v2/sandboxes`, and `POST /sandboxes` of older SDKs and the
 * Python SDK: 201 both), connect (which resumes a paused sandbox), kill,
 * timeout, info, list and metrics; pause, snapshots and fork. The API key
 * arrives as `X-API-KEY`; each key sees only its own sandboxes, paused ones
 * included.
 */
import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import type { z } from 'zod';
import type { VolumeMount } from '../../session/options.js';
import { asMount } from '../../session/session-remounts.js';
import type { Owner } from '../core/auth.js';
import { FORWARDED_BY_HEADER } from '../core/cluster.js';
import type { ServerContext } from '../core/context.js';
import { sandboxDomain } from '../ports/port-address.js';
import {
  ConnectBody,
  CreateBody,
  type CreateRequest,
  DEFAULT_FORK_TIMEOUT_SECONDS,
  DEFAULT_RESUME_TIMEOUT_SECONDS,
  DEFAULT_TEMPLATE,
  DEFAULT_TIMEOUT_SECONDS,
  ForkBody,
  PauseBody,
  ResumeBody,
  SnapshotBody,
  TimeoutBody,
} from './control-schemas.js';
import {
  deleteSnapshot,
  parseSnapshotQuery,
  snapshotNameOf,
  snapshotOfTemplate,
  snapshotPage,
} from './control-snapshots.js';
import { volumeRoutes } from './control-volumes.js';
import { E2bError, toE2bError } from './errors.js';
import { CURSORS_HEADER, listPage, parseListQuery } from './list-query.js';
import { networkOfCreation, trafficOfCreation } from './network-fields.js';
import { presentConnection, presentInfo } from './present.js';
import type { Lifecycle } from './sandbox-keep.js';
import { type E2bSandbox, notFound, type SandboxRow } from './sandbox-row.js';
import type { SandboxTable } from './sandbox-table.js';
import { isTemplateName } from './template-environment.js';

type Handler = (context: Context, owner: Owner, id: string | undefined) => Promise<Response>;

interface ControlRoute {
  method: string;
  pattern: RegExp;
  handler: Handler;
}

async function readJson<Schema extends z.ZodType>(context: Context, schema: Schema): Promise<z.output<Schema>> {
  const text = await context.req.text();
  let value: unknown = {};
  if (text.trim() !== '') {
    try {
      value = JSON.parse(text);
    } catch {
      throw new E2bError(400, 'The request body is not valid JSON.');
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new E2bError(
      400,
      `Invalid request body: ${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : ''}`,
    );
  }
  return parsed.data;
}

const seconds = (value: number): number => value * 1000;

/**
 * The lifecycle a create asks for: `autoPause` is `lifecycle.onTimeout: 'pause'`, `autoResume.enabled`
 * is `lifecycle.autoResume`. A pause that keeps the files alone (`autoPauseMemory: false`) is not
 * offered here: refused, not turned into one that keeps the variables too.
 */
function lifecycleOfCreation(body: CreateRequest): Lifecycle {
  const onTimeout = body.autoPause ? 'pause' : 'kill';
  const autoResume = body.autoResume?.enabled === true;
  if (autoResume && onTimeout !== 'pause') {
    throw new E2bError(
      400,
      "autoResume can only be enabled when the sandbox pauses at its timeout (onTimeout: 'pause').",
    );
  }
  if (body.autoPauseMemory === false) {
    throw new E2bError(
      400,
      'Pauses that keep only the files (keepMemory: false) are not supported by this server (sandcell): its pauses keep the variables too.',
    );
  }
  return { onTimeout, autoResume };
}

/** E2B's `volumeMounts` (`[{name, path}]`, sandcell's `readOnly` and `subPath` beside them) as mounts. */
function mountsOfCreation(body: CreateRequest): { mounts?: VolumeMount[] } {
  if (!body.volumeMounts?.length) return {};
  return {
    mounts: body.volumeMounts.map((mount) => ({
      volume: mount.name,
      path: mount.path,
      ...(mount.readOnly ? { readOnly: true } : {}),
      ...(mount.subPath ? { subPath: mount.subPath } : {}),
    })),
  };
}

export function controlPlane(server: ServerContext, table: SandboxTable) {
  const { registry } = server;
  /** The parent domain of the sandbox's port names, as the SDKs' getHost(port) builds them (ports/). */
  const domainOf = (context: Context): string =>
    sandboxDomain(
      server.options.sandboxDomain,
      (context.env as Partial<HttpBindings> | undefined)?.incoming?.socket.localPort,
    );

  /** A sandbox that runs, resumed if the server paused it while idle; a paused one is `whenPaused`'s error. */
  const running = async (row: SandboxRow, whenPaused: () => E2bError): Promise<E2bSandbox> => {
    const state = table.state(row);
    if (state === 'paused') throw whenPaused();
    return table.resume(row);
  };
  const pausedNotFound = (id: string) => () =>
    new E2bError(404, `Sandbox ${id} is paused: connect to it (Sandbox.connect) first.`);

  const create: Handler = async (context, owner) => {
    const body = await readJson(context, CreateBody);
    const templateId = body.templateID ?? DEFAULT_TEMPLATE;
    const lifecycle = lifecycleOfCreation(body);
    const snapshot = await snapshotOfTemplate(registry, owner, templateId);
    const sandbox = await table.create({
      owner,
      templateId,
      timeoutMs: seconds(body.timeout ?? DEFAULT_TIMEOUT_SECONDS),
      envVars: body.envVars ?? {},
      metadata: body.metadata ?? {},
      lifecycle,
      network: networkOfCreation(body),
      traffic: trafficOfCreation(body),
      ...(snapshot ? { snapshot } : {}),
      // A snapshot's volumes are mounted again unless the create names its own (a deleted one is refused).
      ...(body.volumeMounts?.length || !snapshot?.mounts.length
        ? mountsOfCreation(body)
        : { mounts: snapshot.mounts.map(asMount) }),
    });
    return context.json(presentConnection(sandbox, domainOf(context)), 201);
  };

  // Connect resumes a paused sandbox (201, its timeout from now) and answers a running one (200).
  const connect: Handler = async (context, owner, id) => {
    const body = await readJson(context, ConnectBody);
    const row = await table.get(owner, id ?? '');
    if (table.state(row) === 'paused') {
      if (body.memory === false) {
        throw new E2bError(
          400,
          "Resuming from the files alone (onResume: 'reboot') is not supported by this server (sandcell): a resume brings the variables back too.",
        );
      }
      const resumed = await table.resume(row, { timeoutMs: seconds(body.timeout ?? DEFAULT_TIMEOUT_SECONDS) });
      return context.json(presentConnection(resumed, domainOf(context)), 201);
    }
    const sandbox = await table.resume(row);
    // Connecting with a timeout moves the deadline, never earlier than it is (E2B's rule for running sandboxes).
    if (body.timeout !== undefined && Date.now() + seconds(body.timeout) > sandbox.endAt.getTime()) {
      table.setTimeout(sandbox, seconds(body.timeout));
    }
    return context.json(presentConnection(sandbox, domainOf(context)), 200);
  };

  // The deprecated resume: a paused sandbox only (a running one is 409), for 15 seconds unless told.
  const resume: Handler = async (context, owner, id) => {
    const body = await readJson(context, ResumeBody);
    const row = await table.get(owner, id ?? '');
    if (table.state(row) !== 'paused') throw new E2bError(409, `Sandbox ${row.id} is already running.`);
    if (body.memory === false)
      throw new E2bError(400, 'Resuming from the files alone is not supported by this server.');
    const resumed = await table.resume(row, { timeoutMs: seconds(body.timeout ?? DEFAULT_RESUME_TIMEOUT_SECONDS) });
    return context.json(presentConnection(resumed, domainOf(context)), 201);
  };

  // 204 paused; 409 paused already (the SDK's `false`); 404 not found.
  const pause: Handler = async (context, owner, id) => {
    const body = await readJson(context, PauseBody);
    if (body.memory === false) {
      throw new E2bError(
        400,
        'Pauses that keep only the files (keepMemory: false) are not supported by this server (sandcell): its pauses keep the variables too.',
      );
    }
    const row = await table.get(owner, id ?? '');
    if (!(await table.pause(row))) {
      throw new E2bError(409, `Error pausing sandbox - sandbox '${row.id}' is already paused.`);
    }
    return context.body(null, 204);
  };

  // A paused sandbox is killed too: its paused state is deleted.
  const kill: Handler = async (context, owner, id) => {
    await table.kill(await table.get(owner, id ?? ''));
    return context.body(null, 204);
  };

  // Only a running sandbox has a timeout (E2B answers 404 for a paused one).
  const setTimeout: Handler = async (context, owner, id) => {
    const body = await readJson(context, TimeoutBody);
    const sandbox = await running(await table.get(owner, id ?? ''), pausedNotFound(id ?? ''));
    table.setTimeout(sandbox, seconds(body.timeout));
    return context.body(null, 204);
  };

  const info: Handler = async (context, owner, id) => {
    const row = await table.get(owner, id ?? '');
    const state = table.state(row);
    if (state === undefined) throw notFound(row.id);
    return context.json(presentInfo(row, state, server.options, domainOf(context), true), 200);
  };

  const list: Handler = async (context, owner) => {
    const query = parseListQuery(new URL(context.req.url).searchParams);
    const { page, cursors, nextToken } = listPage(await table.list(owner), query);
    const headers: Record<string, string> = nextToken ? { 'x-next-token': nextToken } : {};
    // A peer gathering the list merges the nodes' pages by these.
    if (context.req.header(FORWARDED_BY_HEADER) !== undefined) headers[CURSORS_HEADER] = cursors.join(',');
    return context.json(
      page.map(({ row, state }) => presentInfo(row, state, server.options, domainOf(context))),
      200,
      headers,
    );
  };

  // Usage history is not kept: an empty series, which the SDK returns as no metrics.
  const metrics: Handler = async (context, owner, id) => {
    await table.get(owner, id ?? '');
    return context.json([], 200);
  };

  // The keep-alive of older SDKs: it extends by the duration given, as setTimeout does.
  const refresh: Handler = async (context, owner, id) => {
    const body = await readJson(context, ConnectBody);
    const sandbox = await running(await table.get(owner, id ?? ''), pausedNotFound(id ?? ''));
    table.setTimeout(sandbox, seconds(body.timeout ?? DEFAULT_TIMEOUT_SECONDS));
    return context.body(null, 204);
  };

  // A snapshot of a running sandbox, which runs on: 201 `{"snapshotID","names":[]}`.
  const createSnapshot: Handler = async (context, owner, id) => {
    const body = await readJson(context, SnapshotBody);
    const name = body.name ? snapshotNameOf(body.name) : undefined;
    if (body.name && (name === undefined || isTemplateName(name))) {
      throw new E2bError(
        400,
        `A snapshot's name is 1 to 63 lower-case letters, digits, ".", "_" or "-", and not a template's (${JSON.stringify(body.name.slice(0, 80))}).`,
      );
    }
    const sandbox = await running(await table.get(owner, id ?? ''), pausedNotFound(id ?? ''));
    const snapshot = await registry.snapshots.take(sandbox.entry, name !== undefined ? { name } : {});
    return context.json({ snapshotID: snapshot.id, names: name !== undefined ? [name] : [] }, 201);
  };

  const listSnapshots: Handler = async (context, owner) => {
    const { page, nextToken } = await snapshotPage(registry, owner, parseSnapshotQuery(context.req.query()));
    return context.json(page, 200, nextToken ? { 'x-next-token': nextToken } : {});
  };

  // The SDK's deleteSnapshot: 204, or 404 (its `false`) for an id that is none of the key's snapshots.
  const removeSnapshot: Handler = async (context, owner, id) => {
    let name = id ?? '';
    try {
      name = decodeURIComponent(name);
    } catch {
      // Not URL encoding: looked up as it is (and not found).
    }
    if (!(await deleteSnapshot(registry, owner, name))) {
      throw new E2bError(
        404,
        `No snapshot ${JSON.stringify(name.slice(0, 80))} (templates here are sandcell environments, which this API does not delete).`,
      );
    }
    return context.body(null, 204);
  };

  // `count` forks of a running sandbox, each with its own id and tokens: 201 with one result per fork.
  const fork: Handler = async (context, owner, id) => {
    const body = await readJson(context, ForkBody);
    const row = await table.get(owner, id ?? '');
    const source = await running(
      row,
      () => new E2bError(409, `Sandbox '${row.id}' is paused and cannot be forked; resume it first.`),
    );
    const timeoutMs = seconds(body.timeout ?? DEFAULT_FORK_TIMEOUT_SECONDS);
    const results: (
      | { sandbox: ReturnType<typeof presentConnection> }
      | { error: { code: number; message: string } }
    )[] = [];
    for (let index = 0; index < (body.count ?? 1); index++) {
      try {
        results.push({ sandbox: presentConnection(await table.fork(source, timeoutMs), domainOf(context)) });
      } catch (error) {
        const mapped = toE2bError(error);
        results.push({ error: { code: mapped.status, message: mapped.message } });
      }
    }
    return context.json(results, 201);
  };

  const ID = '([a-z0-9]{1,64})';
  const routes: ControlRoute[] = [
    { method: 'POST', pattern: /^\/(?:v2\/)?sandboxes$/, handler: create },
    { method: 'GET', pattern: /^\/(?:v2\/)?sandboxes$/, handler: list },
    { method: 'POST', pattern: new RegExp(`^/(?:v2/)?sandboxes/${ID}/connect$`), handler: connect },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/resume$`), handler: resume },
    { method: 'DELETE', pattern: new RegExp(`^/sandboxes/${ID}$`), handler: kill },
    { method: 'GET', pattern: new RegExp(`^/sandboxes/${ID}$`), handler: info },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/timeout$`), handler: setTimeout },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/refreshes$`), handler: refresh },
    { method: 'GET', pattern: new RegExp(`^/sandboxes/${ID}/metrics$`), handler: metrics },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/pause$`), handler: pause },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/snapshots$`), handler: createSnapshot },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/fork$`), handler: fork },
    { method: 'GET', pattern: /^\/snapshots$/, handler: listSnapshots },
    { method: 'DELETE', pattern: /^\/templates\/([^/]{1,256})$/, handler: removeSnapshot },
    ...volumeRoutes(server, readJson),
  ];

  /** Answers a control-plane request at `path` (below /e2b) for an authenticated owner. */
  return async (context: Context, owner: Owner, path: string): Promise<Response> => {
    for (const route of routes) {
      const match = route.pattern.exec(path);
      if (match && route.method === context.req.method) return route.handler(context, owner, match[1]);
    }
    throw new E2bError(404, `No E2B route ${context.req.method} ${path} on this server (sandcell).`);
  };
}
