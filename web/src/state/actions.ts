/**
 * What the user does, each as the request it sends and what its answer
 * changes: ask, run a cell, stop, decide an approval, upload, export, delete,
 * continue an expired conversation, switch between chat and notebook.
 * Failures are reported by report-error.ts; what they change is in
 * conversations.ts.
 */
import { useState } from 'preact/hooks';
import { type Conversation, type ConversationEvent, formatBytes } from '../../../src/protocol/index';
import { ApiError, api, download } from '../api';
import type { Decision } from '../components/CodeStep';
import type { Mode } from '../components/ConversationView';
import { volumeMountPath } from '../components/VolumesPanel';
import type { CellLanguage } from '../languages';
import { describeEnd, modeOf } from './conversation-updates';
import type { Conversations } from './conversations';
import type { Notices } from './notices';
import { errorReporter } from './report-error';
import type { Server } from './server';

export interface ActionsOptions {
  conversations: Conversations;
  server: Server;
  notices: Notices;
}

export function useActions({ conversations, server, notices }: ActionsOptions) {
  const { selectedId, selected } = conversations;
  const { notify, announce } = notices;
  const [draftMode, setDraftMode] = useState<Mode | null>(null);
  /** The volumes the next new conversation mounts, by name. */
  const [draftVolumes, setDraftVolumes] = useState<string[]>([]);
  const reportError = errorReporter({
    notify,
    drop: conversations.drop,
    refreshConversation: conversations.refreshConversation,
    reload: server.load,
    maxUploadBytes: server.config?.maxUploadBytes,
  });

  const defaultMode: Mode = server.config?.model === null ? 'notebook' : 'chat';
  const mode: Mode = selected ? modeOf(selected, defaultMode) : (draftMode ?? defaultMode);
  /** The mode is kept with the conversation on the server, so a reload or another browser reopens it the same. */
  const setMode = (next: Mode) => {
    if (!selectedId || !selected) {
      setDraftMode(next);
      return;
    }
    if (next === mode) return;
    const id = selectedId;
    conversations.setModeOf(id, next);
    api.setMode(id, next).catch((error: unknown) => reportError(id, error));
  };

  /** The conversation to act in (see ensureConversation), or undefined once its failure is reported. */
  const conversationToUse = async (): Promise<Conversation | undefined> => {
    try {
      const chosen = selectedId ? [] : draftVolumes;
      const conversation = await conversations.ensureConversation(
        mode,
        chosen.map((volume) => ({ volume, path: volumeMountPath(volume) })),
      );
      if (chosen.length > 0) setDraftVolumes([]);
      return conversation;
    } catch (error) {
      reportError(undefined, error);
      return undefined;
    }
  };

  /** Runs a streamed turn; resolves true once the server started it, false when it refused. */
  const startTurn = (
    id: string,
    run: (onEvent: (event: ConversationEvent) => void) => Promise<boolean>,
  ): Promise<boolean> => {
    conversations.setStreamingFlag(id, true);
    let turnId: string | undefined;
    let resolveStarted: (started: boolean) => void = () => {};
    const started = new Promise<boolean>((resolve) => {
      resolveStarted = resolve;
    });
    const onEvent = (event: ConversationEvent) => {
      if (event.type === 'turn-start') {
        turnId = event.turn.id;
        resolveStarted(true);
        announce(event.turn.kind === 'cell' ? 'Running the cell…' : 'Working on your question…');
        void conversations.refreshSummaries(); // the first question or cell names the conversation
      }
      const current = turnId;
      if (current === undefined) return;
      conversations.foldEvent(id, current, event);
      if (event.type === 'turn-end') announce(describeEnd(event.turn));
    };
    run(onEvent)
      .then((ended) => {
        resolveStarted(turnId !== undefined);
        conversations.setStreamingFlag(id, false);
        // Broken off before the end: the turn goes on on the server; GET shows it (and polling follows it).
        if (!ended) void conversations.refreshConversation(id);
      })
      .catch((error: unknown) => {
        resolveStarted(false);
        conversations.setStreamingFlag(id, false);
        reportError(id, error);
      })
      .finally(() => {
        conversations.filesChanged();
        void conversations.refreshSummaries();
      });
    return started;
  };

  /** Starts a turn in the open conversation, creating the conversation first when none is open. */
  const startInConversation = async (
    run: (id: string, onEvent: (event: ConversationEvent) => void) => Promise<boolean>,
  ): Promise<boolean> => {
    const conversation = await conversationToUse();
    if (!conversation) return false;
    return startTurn(conversation.id, (onEvent) => run(conversation.id, onEvent));
  };

  const upload = async (chosen: File[]) => {
    const limit = server.config?.maxUploadBytes ?? Number.POSITIVE_INFINITY;
    const tooLarge = chosen.filter((file) => file.size > limit);
    if (tooLarge.length > 0) {
      notify(
        `${tooLarge.map((file) => file.name).join(', ')} ${tooLarge.length === 1 ? 'is' : 'are'} larger than the server accepts (${formatBytes(limit)}).`,
      );
    }
    const files = chosen.filter((file) => file.size <= limit);
    if (files.length === 0) return;
    const conversation = await conversationToUse();
    if (!conversation) return;
    const names = files.map((file) => file.name).join(', ');
    announce(`Uploading ${names}…`);
    notify(`Uploading ${names}…`, 'info');
    try {
      const turn = await api.upload(conversation.id, files);
      conversations.addUploaded(conversation.id, turn);
      notices.dismissStartingWith('Uploading ');
      announce(`Added ${names}.`);
      conversations.filesChanged();
      void conversations.refreshSummaries();
    } catch (error) {
      notices.dismissStartingWith('Uploading ');
      reportError(conversation.id, error);
    }
  };

  return {
    mode,
    setMode,
    draftVolumes,
    setDraftVolumes,
    /** Shows an empty conversation, in the default mode, to start a new one from. */
    newConversation: () => {
      conversations.select(null);
      setDraftMode(null);
    },
    sendMessage: (text: string): Promise<boolean> =>
      startInConversation((id, onEvent) => api.sendMessage(id, text, server.approval, onEvent)),
    runCell: (code: string, language: CellLanguage): Promise<boolean> =>
      startInConversation((id, onEvent) => api.runCell(id, code, language, onEvent)),
    stop: async () => {
      if (!selectedId) return;
      try {
        await api.cancel(selectedId);
        announce('Stopping…');
      } catch (error) {
        reportError(selectedId, error);
      }
    },
    decide: async (approvalId: string, decision: Decision, code?: string) => {
      if (!selectedId) return;
      await api.decide(selectedId, approvalId, decision, code);
    },
    upload,
    exportNotebook: () => {
      if (!selected) return;
      download(api.notebookUrl(selected.id), 'conversation.ipynb').catch((error) => reportError(selected.id, error));
    },
    remove: async (id: string) => {
      try {
        await api.deleteConversation(id);
        conversations.drop(id);
        notify('Conversation deleted.', 'info');
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) conversations.drop(id);
        else reportError(id, error);
      }
    },
    /** Goes on from a conversation whose session is gone, in a new one the server seeds with its history. */
    continueConversation: async (id: string) => {
      try {
        conversations.adopt(await api.continueConversation(id));
      } catch (error) {
        reportError(id, error);
      }
    },
  };
}
