/**
 * What each kind of a conversation's turn does once it runs: a question asks the chat (its code and
 * commands run through the registry) and the answer ends the turn; a cell runs in the session, its
 * output streamed and the files it wrote linked; an upload writes files into /mnt/data, the model
 * told of them when there is one, and keeps their previews in the turn. Whether a turn may start,
 * and what names the conversation, is the conversation's say.
 */
import type { DataChat } from '../../agents/data-chat.js';
import type { FilePreview, Turn } from '../../protocol/index.js';
import type { Language } from '../../session/languages.js';
import type { ManagedSession } from '../core/managed-session.js';
import type { SessionRegistry } from '../core/registry.js';
import type { ConversationLinks } from './conversation-links.js';
import type { ConversationSession } from './conversation-session.js';
import type { RunningTurn } from './running-turn.js';
import type { TurnEvents } from './turn-events.js';
import type { TurnLoop } from './turn-loop.js';

/** The conversation's parts a turn's work goes through. */
export interface TurnWorkParts {
  registry: SessionRegistry;
  /** The conversation's turns (the running one at `running.index`). */
  turns: Turn[];
  loop: TurnLoop;
  session: ConversationSession;
  links: ConversationLinks;
  events: TurnEvents;
}

export interface UploadedFile {
  name: string;
  bytes: Buffer;
}

export class TurnWork {
  constructor(private readonly parts: TurnWorkParts) {}

  async ask(running: RunningTurn, chat: DataChat, content: string): Promise<void> {
    const { loop, turns } = this.parts;
    const answer = await chat.ask(content, { signal: running.abort.signal });
    // A non-streaming model (or a stop without words) left no text for the answer yet.
    const turn = turns[running.index]!;
    const last = turn.steps[turn.steps.length - 1];
    if (!(last?.type === 'text' && last.text.trim() !== '')) loop.emit({ type: 'answer-delta', text: answer.text });
    loop.emit({ type: 'answer-end', stopReason: answer.stopReason, steps: answer.steps, usage: answer.usage });
  }

  /** Runs `code` on `entry` (admitted already), in its language's default context. */
  async cell(
    running: RunningTurn,
    entry: ManagedSession,
    code: string,
    options: { language: Language; timeoutMs?: number | undefined },
  ): Promise<void> {
    const { registry, turns, loop, session, links, events } = this.parts;
    const { language, timeoutMs } = options;
    const callId = turns[running.index]!.id;
    const cellFiles = session.cellFiles!;
    await cellFiles.snapshot();
    await cellFiles.changed(); // what earlier turns wrote is not this cell's doing
    loop.emit({
      type: 'execution-start',
      callId,
      code,
      attempt: 1,
      maxAttempts: 1,
      edited: false,
      ...(language === 'python' ? {} : { language }),
    });
    const execution = await registry.execute(entry, code, {
      admitted: true,
      language,
      timeoutMs,
      signal: running.abort.signal,
      onStdout: (text) => loop.emit({ type: 'stdout-delta', callId, text }),
      onStderr: (text) => loop.emit({ type: 'stderr-delta', callId, text }),
      onResult: (result) => events.result(running, callId, result),
    });
    if (execution.files) links.notePublished(execution.files);
    const files = (await cellFiles.changed()).map((file) =>
      links.codeFile({ path: file.path, size: file.size, kind: 'file' }),
    );
    events.executionEnd(callId, execution, files);
  }

  async upload(running: RunningTurn, files: UploadedFile[]): Promise<void> {
    const { turns, session, links } = this.parts;
    const previews: FilePreview[] = [];
    for (const file of files) {
      const { chat, fileAgent } = session;
      const loaded = chat ? await chat.addFile(file.name, file.bytes) : await fileAgent!.share(file.name, file.bytes);
      previews.push({
        path: file.name,
        size: loaded.size,
        format: loaded.format,
        ...(loaded.rows !== undefined ? { rows: loaded.rows } : {}),
        ...(loaded.columns ? { columns: loaded.columns } : {}),
        ...(loaded.head ? { head: loaded.head } : {}),
        text: loaded.preview,
        url: links.fileUrl(file.name),
      });
    }
    turns[running.index] = { ...turns[running.index]!, files: previews };
  }
}
