/**
 * E2B's code interpreter (`E2b-Sandbox-Port: 49999`) on a sandbox's session: `POST /execute`
 * streams an execution as NDJSON, `/contexts` creates, lists, restarts and removes contexts.
 * Executions go through the registry, so the key's limits, the metrics and the server's longest
 * execution apply; E2B sends no time limit (its SDKs time out on their side and close the
 * connection), so an execution may run up to the server's maximum, and a client that goes away
 * interrupts it.
 */
import type { Context } from 'hono';
import { InvalidInputError } from '../../errors.js';
import type { Execution } from '../../session/execution.js';
import type { ServerContext } from '../core/context.js';
import { E2bError, toE2bExecutionError } from './errors.js';
import {
  contextDirectory,
  DefaultContextHomes,
  E2B_HOME,
  e2bLanguage,
  executionTarget,
  homeSnippet,
  presentContext,
} from './interpreter-contexts.js';
import { environmentSnippets, executionEnvironment } from './interpreter-environment.js';
import { closingLines, type InterpreterLine, interpreterStream, outputLine, resultLine } from './interpreter-ndjson.js';
import type { E2bSandbox } from './sandbox-row.js';

const homes = new DefaultContextHomes();

/** Answers one request; its errors are the dispatcher's to put in E2B's shape (routes.ts). */
export async function handleInterpreter(c: Context, sandbox: E2bSandbox, server: ServerContext): Promise<Response> {
  const { session } = sandbox.entry;
  const method = c.req.method;
  const path = c.req.path.replace(/\/+$/, '');
  if (method === 'POST' && path.endsWith('/execute')) return execute(c, sandbox, server);
  if (path.endsWith('/contexts')) {
    if (method === 'GET') return c.json(session.listContexts().map(presentContext));
    if (method === 'POST') {
      const body = await readJsonObject(c);
      const language = e2bLanguage(body.language);
      const cwd = body.cwd === undefined || body.cwd === null || body.cwd === '' ? E2B_HOME : body.cwd;
      if (typeof cwd !== 'string') throw new InvalidInputError('`cwd` must be a path.');
      const created = await session.createContext({
        language,
        cwd: contextDirectory(cwd),
        ...(Object.keys(sandbox.envVars).length > 0 ? { env: sandbox.envVars } : {}),
      });
      return c.json(presentContext(created));
    }
  }
  const context = /\/contexts\/([^/]+)(\/restart)?$/.exec(path);
  if (context) {
    const id = decodeURIComponent(context[1] as string);
    if (method === 'POST' && context[2]) {
      homes.forget(sandbox, id);
      return c.json(presentContext(await session.restartContext(id)));
    }
    if (method === 'DELETE' && !context[2]) {
      homes.forget(sandbox, id);
      await session.removeContext(id);
      return c.body(null, 204);
    }
  }
  throw new E2bError(404, `The code interpreter has no ${method} ${path}.`);
}

async function execute(c: Context, sandbox: E2bSandbox, server: ServerContext): Promise<Response> {
  const { registry } = server;
  const { entry } = sandbox;
  const body = await readJsonObject(c);
  if (typeof body.code !== 'string') throw new InvalidInputError('`code` must be a string.');
  const code = body.code;
  const target = executionTarget(body, entry.session.listContexts());
  const environment = executionEnvironment(sandbox.envVars, body.env_vars);
  // Refusals (rate, size, queue) answer the request itself, before the stream starts.
  registry.admit(entry, code);
  return interpreterStream(async (send, signal) => {
    const where = 'context' in target ? { context: target.context } : { language: target.language };
    const snippets = environment ? environmentSnippets(target.language, environment) : undefined;
    const contextId = 'context' in target ? target.context : target.language;
    // Queued back to back in the context, so nothing runs between them; the restore runs even when the code was interrupted.
    if (homes.claim(sandbox, contextId)) {
      void entry.session.run(homeSnippet(target.language), where).catch(() => homes.forget(sandbox, contextId));
    }
    if (snippets) void entry.session.run(snippets.set, where).catch(() => undefined);
    const running = registry.execute(entry, code, {
      ...where,
      admitted: true,
      timeoutMs: server.options.limits.maxExecutionMs,
      signal,
      onStdout: (text) => send(outputLine('stdout', text)),
      onStderr: (text) => send(outputLine('stderr', text)),
      onResult: (result) => send(resultLine(result)),
    });
    if (snippets) void entry.session.run(snippets.restore, where).catch(() => undefined);
    let execution: Execution;
    try {
      execution = await running;
    } catch (error) {
      for (const line of failureLines(error)) send(line);
      return;
    }
    // A new kernel starts in /mnt/data again.
    if (execution.stateLost) homes.forget(sandbox, contextId);
    for (const line of closingLines(execution)) send(line);
  });
}

/** An execution that could not run (its session closed, the server shutting down): E2B's error, then the end. */
function failureLines(error: unknown): InterpreterLine[] {
  const { name, value } = toE2bExecutionError(error);
  return [{ type: 'error', name, value, traceback: '' }, { type: 'end_of_execution' }];
}

/** The JSON object a request carries (the dispatcher holds its size to the server's request limit). */
async function readJsonObject(c: Context): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  let parsed: unknown;
  try {
    parsed = text.trim() === '' ? {} : JSON.parse(text);
  } catch (error) {
    throw new E2bError(400, `The body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new E2bError(400, 'The body must be a JSON object.');
  }
  return parsed as Record<string, unknown>;
}
