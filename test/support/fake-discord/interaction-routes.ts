/**
 * Interaction answers: the callback (types 4 reply, 5 deferred reply, 6 deferred update, 7 update,
 * once per interaction and within the deadline, as on Discord) and the webhook routes discord.js uses
 * for followups and for reading, editing or deleting `@original`.
 */
import { DiscordApiError, unknownInteraction, unknownMessage, unknownWebhook } from './discord-errors.js';
import type { DiscordState, PendingInteraction } from './discord-state.js';
import { versionFromBody } from './message-content.js';
import { MessageFlag } from './message-store.js';
import type { DiscordRequestBody } from './request-body.js';
import { noContent, ok, type Route, type RouteContext } from './route.js';

const CallbackType = { reply: 4, deferredReply: 5, deferredUpdate: 6, update: 7 } as const;
const WEBHOOK_TOKEN_LIFETIME_MS = 15 * 60_000;

function interactionByToken(state: DiscordState, applicationId: string | undefined, token: string | undefined) {
  if (applicationId !== state.world.botUser.id) throw unknownWebhook();
  const interaction = [...state.interactions.values()].find((candidate) => candidate.token === token);
  if (!interaction) throw unknownWebhook();
  // Followups need an acknowledged interaction; the token lives 15 minutes.
  if (!interaction.acknowledged || Date.now() - interaction.createdAtMs > WEBHOOK_TOKEN_LIFETIME_MS) {
    throw unknownWebhook();
  }
  return interaction;
}

function replyMessage(
  state: DiscordState,
  interaction: PendingInteraction,
  request: DiscordRequestBody,
  flags: number,
) {
  const channel = state.world.channels.get(interaction.channelId)!;
  const version = versionFromBody(
    { payload: { ...request.payload, flags }, files: request.files },
    { store: state.store, channelId: channel.id, uploadLimitBytes: state.settings.uploadLimitBytes },
  );
  return state.post(
    channel,
    {
      authorId: state.world.botUser.id,
      webhookId: state.world.botUser.id,
      interaction: { id: interaction.id, userId: interaction.userId },
    },
    version,
  );
}

function editMessage(state: DiscordState, messageId: string, request: DiscordRequestBody, clearLoading = false) {
  const message = state.store.byId(messageId);
  if (!message || message.deleted) throw unknownMessage();
  const previous = message.versions.at(-1)!;
  const version = versionFromBody(request, {
    store: state.store,
    channelId: message.channelId,
    uploadLimitBytes: state.settings.uploadLimitBytes,
    previous: clearLoading ? { ...previous, flags: previous.flags & ~MessageFlag.loading } : previous,
  });
  state.edit(message, version);
  return message;
}

async function callback({ state, params, query, body }: RouteContext) {
  const interaction = state.interactions.get(params.interactionId ?? '');
  if (!interaction || interaction.token !== params.token) throw unknownInteraction();
  if (interaction.acknowledged) throw new DiscordApiError(400, 40060, 'Interaction has already been acknowledged.');
  const late = Date.now() - interaction.createdAtMs > state.settings.interactionDeadlineMs;
  if (late) {
    state.settings.log(`interaction ${interaction.id} answered after ${state.settings.interactionDeadlineMs} ms`);
    throw unknownInteraction();
  }
  const request = await body();
  const type = Number(request.payload.type);
  const data = (request.payload.data ?? undefined) as Record<string, unknown> | undefined;
  const inner = { payload: data ?? {}, files: request.files };
  const askedFlags = typeof data?.flags === 'number' ? data.flags : 0;
  let messageId: string;
  if (type === CallbackType.reply) {
    messageId = replyMessage(state, interaction, inner, askedFlags).id;
  } else if (type === CallbackType.deferredReply) {
    const loading = { payload: { content: '' }, files: [] };
    messageId = replyMessage(
      state,
      interaction,
      loading,
      MessageFlag.loading | (askedFlags & MessageFlag.ephemeral),
    ).id;
  } else if (type === CallbackType.deferredUpdate) {
    messageId = interaction.messageId;
  } else if (type === CallbackType.update) {
    messageId = editMessage(state, interaction.messageId, inner).id;
  } else {
    state.settings.log(`interaction callback type ${type} is not faked`);
    throw new DiscordApiError(400, 50035, 'Invalid Form Body', { type: { _errors: [{ code: 'BASE_TYPE_CHOICES' }] } });
  }
  interaction.acknowledged = true;
  interaction.originalMessageId = messageId;
  interaction.answered({ type, data, messageId });
  state.changed();
  if (query.get('with_response') !== 'true') return noContent;
  const message = state.store.byId(messageId)!;
  const flags = message.versions.at(-1)!.flags;
  return ok({
    interaction: {
      id: interaction.id,
      type: 3,
      activity_instance_id: null,
      response_message_id: messageId,
      response_message_loading: (flags & MessageFlag.loading) !== 0,
      response_message_ephemeral: (flags & MessageFlag.ephemeral) !== 0,
    },
    resource: { type, ...(type === CallbackType.deferredUpdate ? {} : { message: state.store.toPayload(message) }) },
  });
}

function webhookMessageId(interaction: PendingInteraction, messageId: string | undefined): string {
  return messageId === '@original' ? interaction.originalMessageId! : (messageId ?? '');
}

/** The message a webhook route names (`@original` or an id), as long as it was not deleted. */
function webhookMessage(state: DiscordState, params: RouteContext['params']) {
  const interaction = interactionByToken(state, params.applicationId, params.token);
  const message = state.store.byId(webhookMessageId(interaction, params.messageId));
  if (!message || message.deleted) throw unknownMessage();
  return message;
}

export const interactionRoutes: Route[] = [
  { method: 'POST', template: '/interactions/:interactionId/:token/callback', auth: false, handle: callback },
  {
    method: 'POST',
    template: '/webhooks/:applicationId/:token',
    auth: false,
    handle: async ({ state, params, query, body }) => {
      const interaction = interactionByToken(state, params.applicationId, params.token);
      const request = await body();
      const flags = typeof request.payload.flags === 'number' ? request.payload.flags : 0;
      const message = replyMessage(state, interaction, request, flags);
      return query.get('wait') === 'true' ? ok(state.store.toPayload(message)) : noContent;
    },
  },
  {
    method: 'GET',
    template: '/webhooks/:applicationId/:token/messages/:messageId',
    auth: false,
    handle: ({ state, params }) => ok(state.store.toPayload(webhookMessage(state, params))),
  },
  {
    method: 'PATCH',
    template: '/webhooks/:applicationId/:token/messages/:messageId',
    auth: false,
    handle: async ({ state, params, body }) => {
      const interaction = interactionByToken(state, params.applicationId, params.token);
      const message = editMessage(state, webhookMessageId(interaction, params.messageId), await body(), true);
      return ok(state.store.toPayload(message));
    },
  },
  {
    method: 'DELETE',
    template: '/webhooks/:applicationId/:token/messages/:messageId',
    auth: false,
    handle: ({ state, params }) => {
      const message = webhookMessage(state, params);
      message.deleted = true;
      state.changed();
      return noContent;
    },
  },
];
