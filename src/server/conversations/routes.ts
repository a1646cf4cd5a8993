/**
 * /v1/conversations: chats with the server's model and notebook cells, each
 * conversation on its own session, with the history kept by the server.
 * Turns stream their events as SSE (or NDJSON), or answer JSON when they end.
 */
import type { Context } from 'hono';
import type { z } from 'zod';
import { normalizeDataPath } from '../../internal/data-path.js';
import { IMAGE_TYPES } from '../../protocol/images.js';
import type { ConversationEvent, Turn } from '../../protocol/index.js';
import type { ServerContext } from '../core/context.js';
import { ErrorSchema, UploadForm } from '../http/common-schemas.js';
import { imageResponse } from '../http/content-type.js';
import { notFound, toHttpError } from '../http/errors.js';
import { eventStream, requestedStreamFormat, type StreamFormat } from '../http/execution-stream.js';
import { readUploadForm } from '../http/multipart.js';
import { defineRoute, type RouteSpec } from '../http/route.js';
import type { ServerConversation, TurnListener } from './conversation.js';
import { conversationNotebook, notebookBytes, notebookFileName } from './notebook.js';
import {
  ApprovalAnswerSchema,
  ApprovalBody,
  ApprovalParams,
  CancelSchema,
  CellBody,
  ConversationIdParams,
  ConversationImageParams,
  ConversationListSchema,
  ConversationSchema,
  ConversationSummarySchema,
  CreateConversationBody,
  MessageBody,
  ServerConfigSchema,
  TurnSchema,
  TurnStreamQuery,
  UpdateConversationBody,
  UploadTurnSchema,
} from './schemas.js';

const TAGS = ['conversations'];
const notFoundResponse = { description: 'No such conversation (or not yours).', json: ErrorSchema };
const badRequestResponse = { description: 'Invalid input.', json: ErrorSchema };
const turnRefusals = {
  400: badRequestResponse,
  404: notFoundResponse,
  409: { description: 'A turn is already running (`conversation-busy`).', json: ErrorSchema },
  410: { description: 'The session expired: its state is gone (`conversation-expired`).', json: ErrorSchema },
};

export const MODEL_HELP =
  'Start the server with a model: `sandcell serve --provider openai --model gpt-4.1` (key in OPENAI_API_KEY), ' +
  '`--provider anthropic` (ANTHROPIC_API_KEY), or any OpenAI-compatible endpoint such as a local Ollama: ' +
  '`sandcell serve --base-url http://localhost:11434/v1 --model llama3.1`. SANDCELL_PROVIDER and SANDCELL_MODEL work too.';

/** Runs a turn and answers its events as a stream, or the finished turn as JSON. */
async function answerTurn(
  context: Context,
  format: StreamFormat | undefined,
  start: (listener?: TurnListener) => { turn: Turn; done: Promise<Turn> },
): Promise<Response> {
  if (!format) {
    const { done } = start();
    return context.json(await done);
  }
  // The turn starts (or is refused with an HTTP status) before the response does.
  const events: ConversationEvent[] = [];
  let deliver: ((event: ConversationEvent) => void) | undefined;
  const { done } = start((event) => (deliver ? deliver(event) : events.push(event)));
  return eventStream<ConversationEvent>(format, async (send, signal) => {
    for (const event of events) send(event);
    deliver = send;
    // A client that goes away does not stop the turn: it keeps running and stays in the history.
    await Promise.race([done, new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))]);
    deliver = undefined;
  });
}

async function readUpload(context: Context): Promise<{ name: string; bytes: Buffer }[]> {
  const { files } = await readUploadForm(context, 'Upload with multipart/form-data, field `file` (repeatable).');
  // Every name is checked before any file is read or written.
  const named = files.map((file) => ({ file, name: normalizeDataPath(file.name, { allowRoot: false }) }));
  return Promise.all(named.map(async ({ file, name }) => ({ name, bytes: Buffer.from(await file.arrayBuffer()) })));
}

export function conversationRoutes(server: ServerContext): RouteSpec<never, never, never>[] {
  const { conversations } = server;
  // In a cluster, one handed over by a node that went is taken up here (handover.ts).
  const find = (owner: Parameters<typeof conversations.get>[0], id: string): Promise<ServerConversation> =>
    conversations.find(owner, id);
  const routes = [
    defineRoute({
      method: 'get',
      path: '/v1/config',
      operationId: 'getConfig',
      summary: "What a client needs to know: the server's model (or none), the approval default and limits.",
      tags: TAGS,
      responses: { 200: { description: 'The configuration.', json: ServerConfigSchema } },
      handler: (c) => {
        const model = conversations.settings.model;
        const body: z.output<typeof ServerConfigSchema> = {
          version: server.version,
          model: model ? { provider: model.provider, model: model.model } : null,
          modelHelp: MODEL_HELP,
          approvalDefault: conversations.settings.approvalDefault,
          maxUploadBytes: server.options.limits.maxUploadBytes,
          idleTimeoutMs: server.options.idleTimeoutMs,
          onIdle: server.options.onIdle,
        };
        return c.json(body);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/conversations',
      operationId: 'createConversation',
      summary: 'Start a conversation: it gets its own session from the warm pool.',
      tags: TAGS,
      body: { json: CreateConversationBody },
      responses: {
        201: { description: 'The new conversation.', json: ConversationSchema },
        429: { description: "The key's session limit is reached.", json: ErrorSchema },
        503: { description: 'The server is at capacity or cannot start sandboxes.', json: ErrorSchema },
      },
      handler: async (c, { owner, body }) => {
        const request = body as z.output<typeof CreateConversationBody> | undefined;
        const conversation = await conversations.create(owner, request?.title, undefined, request?.volumes);
        conversation.mode = request?.mode;
        return c.json(conversation.view(), 201, { location: `/v1/conversations/${conversation.id}` });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/conversations',
      operationId: 'listConversations',
      summary: "The caller's conversations, most recently updated first (expired ones stay listed for a while).",
      tags: TAGS,
      responses: { 200: { description: 'Conversations.', json: ConversationListSchema } },
      handler: async (c, { owner }) => c.json({ conversations: await conversations.summaries(owner) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/conversations/{id}',
      operationId: 'getConversation',
      summary: 'A conversation with its history (every turn, as it was streamed).',
      tags: TAGS,
      params: ConversationIdParams,
      responses: { 200: { description: 'The conversation.', json: ConversationSchema }, 404: notFoundResponse },
      handler: async (c, { owner, params }) => c.json((await find(owner, params.id)).view()),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/conversations/{id}',
      operationId: 'updateConversation',
      summary: 'Change what a client keeps with a conversation: its `mode` (chat or notebook), so it reopens the same.',
      tags: TAGS,
      params: ConversationIdParams,
      body: { json: UpdateConversationBody, required: true },
      responses: {
        200: { description: 'The conversation, without its turns.', json: ConversationSummarySchema },
        400: badRequestResponse,
        404: notFoundResponse,
      },
      handler: async (c, { owner, params, body }) => {
        const conversation = await find(owner, params.id);
        conversation.mode = (body as z.output<typeof UpdateConversationBody>).mode;
        return c.json(conversation.summary());
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/conversations/{id}',
      operationId: 'deleteConversation',
      summary: 'Delete a conversation: its turn stops, its session closes, its history is dropped.',
      tags: TAGS,
      params: ConversationIdParams,
      responses: { 204: { description: 'Deleted.' }, 404: notFoundResponse },
      handler: async (c, { owner, params }) => {
        await conversations.remove(await find(owner, params.id));
        return c.body(null, 204);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/conversations/{id}/continue',
      operationId: 'continueConversation',
      summary: 'Go on with a conversation whose session is gone (expired, or the server restarted), in a new one.',
      description:
        'Creates a new conversation on a new session; its `continuedFrom` names the earlier one, which stays as it ' +
        'was (read-only). The model is given the earlier history as context; nothing of it is re-run: the earlier ' +
        'variables and files (uploads included) do not exist in the new session.',
      tags: TAGS,
      params: ConversationIdParams,
      responses: {
        201: { description: 'The new conversation.', json: ConversationSchema },
        404: notFoundResponse,
        409: { description: 'The conversation still has its session (`conversation-active`).', json: ErrorSchema },
        429: { description: "The key's session limit is reached.", json: ErrorSchema },
        503: { description: 'The server is at capacity or cannot start sandboxes.', json: ErrorSchema },
      },
      handler: async (c, { owner, params }) => {
        const conversation = await conversations.continue(owner, await find(owner, params.id));
        return c.json(conversation.view(), 201, { location: `/v1/conversations/${conversation.id}` });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/conversations/{id}/messages',
      operationId: 'sendMessage',
      summary: "Ask the server's model; it writes and runs code in the session until it can answer.",
      description:
        'With `Accept: text/event-stream` (or `?stream=sse`; `ndjson` works too) the turn streams its events: ' +
        '`turn-start`, `step-start`, `answer-delta`, `code-ready`, `approval-request`, `execution-start`, ' +
        '`stdout-delta`, `stderr-delta`, `result-ready`, `execution-end`, `execution-skipped`, `answer-end`, ' +
        '`error`, and last `turn-end` with the turn as kept in the history. Otherwise the answer is that turn, ' +
        'as JSON, when it ends. A client that disconnects does not stop the turn; POST …/cancel does.',
      tags: TAGS,
      params: ConversationIdParams,
      query: TurnStreamQuery,
      body: { json: MessageBody, required: true },
      responses: {
        200: { description: 'The turn (or its event stream).', json: TurnSchema, contentTypes: ['text/event-stream'] },
        ...turnRefusals,
        409: {
          description:
            'A turn is already running (`conversation-busy`), or the server has no model (`model-not-configured`).',
          json: ErrorSchema,
        },
      },
      handler: async (c, { owner, params, query, body }) => {
        const conversation = await find(owner, params.id);
        const request = body as z.output<typeof MessageBody>;
        // A paused session is resumed first (not for a question no model can answer).
        if (conversations.settings.model) await conversation.ensureSession();
        const approval = request.approval ?? conversations.settings.approvalDefault;
        return answerTurn(c, requestedStreamFormat(c.req.header('accept'), query.stream), (listener) =>
          conversation.ask(request.content, approval, listener),
        );
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/conversations/{id}/cells',
      operationId: 'runCell',
      summary: 'Run a notebook cell (your own code) in the conversation’s session; no model needed.',
      description:
        'Streams like messages (`turn-start`, `execution-start`, `stdout-delta`, `stderr-delta`, `result-ready`, ' +
        '`execution-end`, `turn-end`), or answers the finished turn as JSON.',
      tags: TAGS,
      params: ConversationIdParams,
      query: TurnStreamQuery,
      body: { json: CellBody, required: true },
      responses: {
        200: { description: 'The turn (or its event stream).', json: TurnSchema, contentTypes: ['text/event-stream'] },
        ...turnRefusals,
        413: { description: 'The code is over the limit.', json: ErrorSchema },
        429: {
          description:
            'Too many executions per minute for this key (`rate-limited`), or too many waiting in this session (`queue-full`).',
          json: ErrorSchema,
        },
      },
      handler: async (c, { owner, params, query, body }) => {
        const conversation = await find(owner, params.id);
        const request = body as z.output<typeof CellBody>;
        await conversation.ensureSession(); // a paused session is resumed first
        return answerTurn(c, requestedStreamFormat(c.req.header('accept'), query.stream), (listener) =>
          conversation.runCell(request.code, { language: request.language, timeoutMs: request.timeoutMs }, listener),
        );
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/conversations/{id}/approvals/{approvalId}',
      operationId: 'answerApproval',
      summary: 'Run, skip or edit a piece of code that waits for approval (`approval-request` events).',
      tags: TAGS,
      params: ApprovalParams,
      body: { json: ApprovalBody, required: true },
      responses: {
        200: { description: 'Recorded; the turn goes on.', json: ApprovalAnswerSchema },
        400: badRequestResponse,
        404: { description: 'No such conversation or pending approval.', json: ErrorSchema },
        409: { description: 'The approval was already answered.', json: ErrorSchema },
      },
      handler: async (c, { owner, params, body }) => {
        const answer = body as z.output<typeof ApprovalBody>;
        (await find(owner, params.id)).approve(params.approvalId, answer);
        return c.json({ approvalId: params.approvalId, decision: answer.decision });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/conversations/{id}/cancel',
      operationId: 'cancelTurn',
      summary: 'Stop the running turn: running code is interrupted, waiting code is skipped, the model stops.',
      tags: TAGS,
      params: ConversationIdParams,
      responses: { 200: { description: 'Whether a turn was running.', json: CancelSchema }, 404: notFoundResponse },
      handler: async (c, { owner, params }) => c.json({ cancelled: (await find(owner, params.id)).cancel() }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/conversations/{id}/files',
      operationId: 'uploadConversationFiles',
      summary: "Add data files (multipart, field `file`, repeatable) to the session's /mnt/data, with previews.",
      description:
        'The answer is an `upload` turn holding each file’s preview (format, rows, columns and dtypes, first ' +
        'rows), computed on the server without running code; the previews are also given to the model.',
      tags: TAGS,
      params: ConversationIdParams,
      body: { multipart: UploadForm, required: true },
      bodyKind: 'upload',
      responses: {
        201: { description: 'The upload turn.', json: UploadTurnSchema },
        ...turnRefusals,
        413: { description: 'Over the upload limit.', json: ErrorSchema },
        415: { description: 'Not multipart/form-data.', json: ErrorSchema },
        429: {
          description: 'Too many executions and uploads per minute for this key (see `Retry-After`).',
          json: ErrorSchema,
        },
      },
      handler: async (c, { owner, params }) => {
        const conversation = await find(owner, params.id);
        await conversation.ensureSession(); // a paused session is resumed first
        conversation.admitUpload(); // before the body is read: a refusal costs the server nothing
        const files = await readUpload(c);
        await conversation.ensureSession(); // paused while the body came (a long upload)?
        const { turn, failure } = await conversation.upload(files);
        // A client's mistake (a FIFO the code made where the file goes, …) answers its 4xx; the failed turn stays.
        if (failure !== undefined) {
          const refusal = toHttpError(failure);
          if (refusal.status >= 400 && refusal.status < 500) throw refusal;
        }
        return c.json({ turn }, 201);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/conversations/{id}/images/{name}',
      operationId: 'getConversationImage',
      summary: 'An image from the conversation’s outputs (linked from its results).',
      tags: TAGS,
      params: ConversationImageParams,
      responses: {
        200: { description: 'The image.', contentTypes: IMAGE_TYPES.map((type) => type.mimeType) },
        404: notFoundResponse,
      },
      handler: async (c, { owner, params }) => {
        const image = (await find(owner, params.id)).images.get(params.name);
        if (!image) throw notFound(`No image ${params.name} in this conversation (only the latest images are kept).`);
        return imageResponse(c, image);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/conversations/{id}/notebook',
      operationId: 'exportNotebook',
      summary: 'The conversation as a Jupyter notebook (.ipynb, nbformat 4.5) with its outputs and images.',
      tags: TAGS,
      params: ConversationIdParams,
      responses: {
        200: { description: 'The notebook.', contentTypes: ['application/x-ipynb+json'] },
        404: notFoundResponse,
      },
      handler: async (c, { owner, params }) => {
        const conversation = await find(owner, params.id);
        const session = conversation.liveSession; // a paused session is not resumed for an export
        const notebook = await conversationNotebook({
          id: conversation.id,
          title: conversation.title,
          turns: conversation.turns,
          image: (url) => conversation.images.get(url.slice(url.lastIndexOf('/') + 1)),
          ...(session ? { readFile: (path: string) => session.files.read(path) } : {}),
        });
        const name = notebookFileName(conversation.title);
        return c.body(new Uint8Array(notebookBytes(notebook)), 200, {
          'content-type': 'application/x-ipynb+json',
          'content-disposition': `attachment; filename="${name.replace(/[^\x20-\x7e]/g, '_').replace(/"/g, '')}"; filename*=UTF-8''${encodeURIComponent(name)}`,
        });
      },
    }),
  ];
  return routes as unknown as RouteSpec<never, never, never>[];
}
