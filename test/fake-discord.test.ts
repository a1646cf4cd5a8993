/**
 * The fake Discord against the real discord.js 14 client, no sandcell involved: if discord.js logs
 * in, sees messages, replies with files, edits, threads, answers buttons and resumes a dropped
 * gateway through it, the bot's tests against it mean something. Assertions check what discord.js
 * reported (its events, returned structures, errors), with the fake's record as the second witness.
 */
import { once } from 'node:events';
import {
  ActionRowBuilder,
  ButtonBuilder,
  ButtonStyle,
  ChannelType,
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  type Interaction,
  type Message,
  MessageFlags,
  Partials,
  PermissionFlagsBits,
  Routes,
} from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type FakeDiscord,
  type FakeDiscordOptions,
  Permission,
  startFakeDiscord,
} from './support/fake-discord/index.js';

const ALL_NEEDED_INTENTS = [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.MessageContent,
  GatewayIntentBits.DirectMessages,
];

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const discord = await startFakeDiscord(options);
  cleanups.push(() => discord.close());
  return discord;
}

async function loggedInClient(discord: FakeDiscord, intents = ALL_NEEDED_INTENTS): Promise<Client> {
  const client = new Client({ intents, partials: [Partials.Channel], rest: { api: discord.apiUrl } });
  cleanups.push(() => client.destroy());
  const ready = once(client, Events.ClientReady);
  await client.login(discord.token);
  await ready;
  return client;
}

function nextEvent<T>(client: Client, event: string, filter: (value: T) => boolean = () => true): Promise<T> {
  return new Promise((resolve) => {
    const listener = (value: T) => {
      if (!filter(value)) return;
      client.off(event, listener);
      resolve(value);
    };
    client.on(event, listener);
  });
}

describe('fake Discord with the real discord.js client', () => {
  it('logs in: the client sees itself, the guild, its channels, roles and members', async () => {
    const discord = await fakeDiscord();
    const client = await loggedInClient(discord);
    expect(client.user?.id).toBe(discord.botUser.id);
    expect(client.user?.bot).toBe(true);
    const guild = client.guilds.cache.get(discord.guild.id);
    expect(guild?.available).toBe(true);
    expect(guild?.channels.cache.get(discord.channel.id)?.name).toBe('general');
    expect(guild?.members.cache.get(discord.users.alice.id)?.roles.cache.has(discord.roles.analysts.id)).toBe(true);
    expect(client.guilds.cache.has(discord.otherGuild.id)).toBe(true);
    expect((await client.users.fetch(discord.users.bob.id)).username).toBe('bob');
    expect(discord.unknownRequests).toEqual([]);
  });

  it('refuses a wrong token the way Discord does', async () => {
    const discord = await fakeDiscord();
    const client = new Client({ intents: ALL_NEEDED_INTENTS, rest: { api: discord.apiUrl } });
    cleanups.push(() => client.destroy());
    await expect(client.login('not-the-token')).rejects.toThrow(/invalid token/i);
  });

  it('closes the gateway on privileged intents the portal has not switched on, as Discord does', async () => {
    const discord = await fakeDiscord();
    const client = new Client({
      intents: [...ALL_NEEDED_INTENTS, GatewayIntentBits.GuildMembers],
      rest: { api: discord.apiUrl },
    });
    cleanups.push(() => client.destroy());
    await expect(client.login(discord.token)).rejects.toThrow(/disallowed intents/i);
  });

  it("answers an unknown route with Discord's 404 body and records it for the test", async () => {
    const discord = await fakeDiscord({ log: () => {} });
    const client = await loggedInClient(discord);
    await expect(client.rest.get('/guilds/1/audit-logs')).rejects.toSatisfy(
      (error) => error instanceof DiscordAPIError && error.status === 404 && error.code === 0,
    );
    expect(discord.unknownRequests).toEqual(['GET /api/v10/guilds/1/audit-logs']);
  });

  it('delivers a message with its attachment, takes a reply with a file, an edit and a thread', async () => {
    const discord = await fakeDiscord();
    const client = await loggedInClient(discord);
    const seen = nextEvent<Message>(client, Events.MessageCreate, (message) => !message.author.bot);
    const csv = 'month,sales\njan,3\nfeb,5\n';
    discord.userSays({
      author: discord.users.alice,
      channelId: discord.channel.id,
      content: 'plot this',
      mentionBot: true,
      attachments: [{ name: 'sales.csv', bytes: csv, contentType: 'text/csv' }],
    });
    const message = await seen;
    expect(message.author.id).toBe(discord.users.alice.id);
    expect(message.mentions.has(client.user!)).toBe(true);
    expect(message.content).toBe(`<@${discord.botUser.id}> plot this`);
    expect(message.member?.roles.cache.has(discord.roles.analysts.id)).toBe(true);
    const attachment = message.attachments.first()!;
    expect(attachment.name).toBe('sales.csv');
    expect(attachment.contentType).toBe('text/csv');
    expect(await (await fetch(attachment.url)).text()).toBe(csv);

    if (!message.channel.isSendable()) throw new Error('the channel should be sendable');
    await message.channel.sendTyping();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const reply = await message.reply({ content: 'working…', files: [{ attachment: png, name: 'chart.png' }] });
    expect(reply.reference?.messageId).toBe(message.id);
    const chart = reply.attachments.first()!;
    expect(chart.name).toBe('chart.png');
    expect(Buffer.from(await (await fetch(chart.url)).arrayBuffer())).toEqual(png);

    const kept = await reply.edit({ content: 'done' });
    expect(kept.content).toBe('done');
    expect(kept.attachments.map((file) => file.name)).toEqual(['chart.png']);
    const replaced = await reply.edit({
      content: 'done, with data',
      files: [{ attachment: Buffer.from('a,b\n1,2\n'), name: 'data.csv' }],
      attachments: [],
    });
    expect(replaced.attachments.map((file) => file.name)).toEqual(['data.csv']);
    expect(replaced.editedTimestamp).not.toBeNull();

    const thread = await message.startThread({ name: 'plot this' });
    expect(thread.isThread()).toBe(true);
    expect(thread.parentId).toBe(discord.channel.id);
    const inThread = await thread.send('follow-ups here');
    expect(inThread.channelId).toBe(thread.id);
    const followUp = nextEvent<Message>(client, Events.MessageCreate, (candidate) => !candidate.author.bot);
    discord.userSays({ author: discord.users.alice, channelId: thread.id, content: 'now by month' });
    const seenInThread = await followUp;
    expect(seenInThread.channel.isThread()).toBe(true);
    expect(seenInThread.content).toBe('now by month');

    const [recorded] = discord.messagesIn(discord.channel.id);
    expect(recorded?.versions.map((version) => version.content)).toEqual(['working…', 'done', 'done, with data']);
    expect(discord.typingIn(discord.channel.id)).toBe(1);
    expect(discord.unknownRequests).toEqual([]);
  });

  it('hides message content from a bot without the intent unless it is mentioned, as Discord does', async () => {
    const discord = await fakeDiscord();
    const client = await loggedInClient(discord, [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages]);
    const first = nextEvent<Message>(client, Events.MessageCreate);
    discord.userSays({ author: discord.users.bob, channelId: discord.channel.id, content: 'not for you' });
    expect((await first).content).toBe('');
    const second = nextEvent<Message>(client, Events.MessageCreate);
    discord.userSays({ author: discord.users.bob, channelId: discord.channel.id, content: 'hi', mentionBot: true });
    expect((await second).content).toBe(`<@${discord.botUser.id}> hi`);
  });

  it('delivers direct messages to a client with the channel partial, and takes its answer', async () => {
    const discord = await fakeDiscord();
    const client = await loggedInClient(discord);
    const dm = discord.directMessageChannel(discord.users.bob);
    const seen = nextEvent<Message>(client, Events.MessageCreate, (message) => !message.author.bot);
    discord.userSays({ author: discord.users.bob, channelId: dm.id, content: 'private question' });
    const message = await seen;
    expect(message.channel.type).toBe(ChannelType.DM);
    expect(message.guildId).toBeNull();
    if (!message.channel.isSendable()) throw new Error('the DM should be sendable');
    await message.channel.send('private answer');
    const opened = await (await client.users.fetch(discord.users.bob.id)).createDM();
    expect(opened.id).toBe(dm.id);
    expect(discord.messagesIn(dm.id).map((reply) => reply.content)).toEqual(['private answer']);
  });

  it('dispatches button clicks and takes the answers discord.js sends', async () => {
    const discord = await fakeDiscord();
    const client = await loggedInClient(discord);
    const channel = await client.channels.fetch(discord.channel.id);
    if (!channel?.isSendable()) throw new Error('the channel should be sendable');
    const row = new ActionRowBuilder<ButtonBuilder>().addComponents(
      new ButtonBuilder().setCustomId('run').setLabel('Run').setStyle(ButtonStyle.Success),
      new ButtonBuilder().setCustomId('skip').setLabel('Skip').setStyle(ButtonStyle.Secondary),
    );
    const prompt = await channel.send({ content: 'Run this code?', components: [row] });

    const clicked = nextEvent<Interaction>(client, Events.InteractionCreate);
    const answer = discord.clickButton({ user: discord.users.bob, message: prompt, customId: 'skip' });
    const interaction = await clicked;
    if (!interaction.isButton()) throw new Error('expected a button interaction');
    expect(interaction.customId).toBe('skip');
    expect(interaction.user.id).toBe(discord.users.bob.id);
    expect(interaction.message.id).toBe(prompt.id);
    await interaction.reply({ content: 'Only the asker can press this.', flags: MessageFlags.Ephemeral });
    expect((await answer).type).toBe(4);
    // discord.js refuses a second reply itself; its REST client shows what Discord would answer.
    const secondReply = client.rest.post(Routes.interactionCallback(interaction.id, interaction.token), {
      auth: false,
      body: { type: 4, data: { content: 'again' } },
    });
    await expect(secondReply).rejects.toSatisfy((error) => error instanceof DiscordAPIError && error.code === 40060);

    const clickedRun = nextEvent<Interaction>(client, Events.InteractionCreate);
    const runAnswer = discord.clickButton({ user: discord.users.alice, message: prompt, customId: 'run' });
    const run = await clickedRun;
    if (!run.isButton()) throw new Error('expected a button interaction');
    await run.deferUpdate();
    expect((await runAnswer).type).toBe(6);
    const edited = await run.editReply({ content: 'Ran it.', components: [] });
    expect(edited.id).toBe(prompt.id);
    expect(edited.components).toEqual([]);
    const followUp = await run.followUp({
      content: 'result',
      files: [{ attachment: Buffer.from('x'), name: 'out.txt' }],
    });
    expect(followUp.attachments.first()?.name).toBe('out.txt');

    const recorded = discord.messagesIn(discord.channel.id);
    expect(recorded.find((message) => message.ephemeral)?.interactionUserId).toBe(discord.users.bob.id);
    expect(recorded.find((message) => message.id === prompt.id)?.content).toBe('Ran it.');
    expect(discord.unknownRequests).toEqual([]);
  });

  it('refuses a file over the upload limit with the error Discord gives', async () => {
    const discord = await fakeDiscord({ uploadLimitBytes: 1024 });
    const client = await loggedInClient(discord);
    const channel = await client.channels.fetch(discord.channel.id);
    if (!channel?.isSendable()) throw new Error('the channel should be sendable');
    await expect(channel.send({ files: [{ attachment: Buffer.alloc(2048), name: 'big.bin' }] })).rejects.toSatisfy(
      (error) => error instanceof DiscordAPIError && error.code === 40005 && error.status === 413,
    );
    await expect(channel.send({ content: 'x'.repeat(2001) })).rejects.toSatisfy(
      (error) => error instanceof DiscordAPIError && error.code === 50035,
    );
  });

  it('survives a dropped gateway by resuming, with the events sent meanwhile replayed', async () => {
    const discord = await fakeDiscord();
    const client = await loggedInClient(discord);
    const resumed = nextEvent<number>(client, Events.ShardResume);
    await discord.dropGateway();
    expect(discord.gatewayStats().connected).toBe(false);
    const seen = nextEvent<Message>(client, Events.MessageCreate);
    discord.userSays({ author: discord.users.alice, channelId: discord.channel.id, content: 'sent while away' });
    await resumed;
    expect((await seen).content).toBe('sent while away');
    expect(discord.gatewayStats()).toMatchObject({ identifies: 1, resumes: 1, connected: true });
    const after = nextEvent<Message>(client, Events.MessageCreate);
    discord.userSays({ author: discord.users.alice, channelId: discord.channel.id, content: 'and after' });
    expect((await after).content).toBe('and after');
  });

  it('keeps channel overwrites as discord.js reads them, and refuses a thread the bot may not make (403, 50013)', async () => {
    const discord = await fakeDiscord();
    const client = await loggedInClient(discord);
    const updated = nextEvent(client, Events.ChannelUpdate);
    discord.setPermissionOverwrite(discord.channel.id, {
      id: discord.guild.id,
      type: 0,
      allow: 0n,
      deny: Permission.createPublicThreads,
    });
    await updated;
    const channel = client.channels.cache.get(discord.channel.id);
    if (channel?.type !== ChannelType.GuildText) throw new Error('general should be a text channel');
    const permissions = channel.permissionsFor(client.user!);
    expect(permissions?.has(PermissionFlagsBits.CreatePublicThreads)).toBe(false);
    expect(permissions?.has(PermissionFlagsBits.SendMessagesInThreads)).toBe(true);
    const seen = nextEvent<Message>(client, Events.MessageCreate, (message) => !message.author.bot);
    discord.userSays({ author: discord.users.alice, channelId: channel.id, content: 'a thread?', mentionBot: true });
    const message = await seen;
    await expect(message.startThread({ name: 'no' })).rejects.toSatisfy(
      (error) => error instanceof DiscordAPIError && error.status === 403 && error.code === 50013,
    );
    expect(discord.threadsOf(channel.id)).toEqual([]);
    await channel.send('the channel itself still takes messages');

    // A member overwrite for the bot gives it back; discord.js and the fake agree.
    const again = nextEvent(client, Events.ChannelUpdate);
    discord.setPermissionOverwrite(channel.id, {
      id: discord.botUser.id,
      type: 1,
      allow: Permission.createPublicThreads,
      deny: 0n,
    });
    await again;
    expect(channel.permissionsFor(client.user!)?.has(PermissionFlagsBits.CreatePublicThreads)).toBe(true);
    expect((await message.startThread({ name: 'yes' })).id).toBe(message.id);
    expect(discord.requests.filter((request) => request.endsWith('/threads'))).toHaveLength(2);
  });

  it('stops answering as an unreachable Discord would: requests and the logout hang until it closes', async () => {
    const discord = await fakeDiscord();
    const client = await loggedInClient(discord);
    discord.stopAnswering();
    const settled = (promise: Promise<unknown>) =>
      Promise.race([
        promise.then(
          () => true,
          () => true,
        ),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1500)),
      ]);
    const fetching = client.channels.fetch(discord.channel.id, { force: true });
    const destroying = client.destroy();
    expect(await settled(fetching)).toBe(false);
    expect(await settled(destroying)).toBe(false);
    await discord.close();
    // Its connections ended, the close handshake ends too.
    await destroying;
  });
});
