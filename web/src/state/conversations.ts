/**
 * This page's copy of the conversations: the summaries the sidebar lists, the
 * full history of each one opened, which one is selected, which are streaming
 * a turn to this page, and when their files may have changed. What the
 * server answers is put in here; what the user asks for is in actions.ts.
 */
import { useCallback, useRef, useState } from 'preact/hooks';
import type { Conversation, ConversationEvent, ConversationSummary, Turn } from '../../../src/protocol/index';
import { ApiError, api, type VolumeChoice } from '../api';
import type { Mode } from '../components/ConversationView';
import { idFromHash } from './address';
import { fold, summaryOf } from './conversation-updates';

/** Said when the server answers that a conversation this page lists is not there. */
export const GONE_MESSAGE =
  'That conversation is no longer on the server (it may have restarted), so it was removed from the list.';

export type Conversations = ReturnType<typeof useConversations>;

export function useConversations(notify: (text: string) => void) {
  const [summaries, setSummaries] = useState<ConversationSummary[]>([]);
  const [details, setDetails] = useState<Record<string, Conversation>>({});
  const [selectedId, setSelectedId] = useState<string | null>(idFromHash());
  const [streaming, setStreaming] = useState<string[]>([]);
  const [filesVersion, setFilesVersion] = useState(0);
  const streamingRef = useRef(new Set<string>());
  /** Per conversation, how many times this page changed it from a request's answer (an upload's): a fetch sent
   * before the latest of those brings an older copy, and is not applied. */
  const changedRef = useRef(new Map<string, number>());
  const detailsRef = useRef(details);
  detailsRef.current = details;

  const refreshSummaries = useCallback(async () => {
    try {
      const list = await api.listConversations();
      setSummaries(list);
      // Titles and expiry change on the server (a title comes from the first question): keep the open ones in step.
      setDetails((all) => {
        let changed = false;
        const next = { ...all };
        for (const summary of list) {
          const open = all[summary.id];
          if (!open) continue;
          const { busy: _busy, turnCount: _turnCount, ...fields } = summary;
          next[summary.id] = { ...open, ...fields };
          changed = true;
        }
        return changed ? next : all;
      });
    } catch {
      // the next action reports what is wrong
    }
  }, []);

  const drop = useCallback(
    (id: string, message?: string) => {
      setSummaries((current) => current.filter((summary) => summary.id !== id));
      setDetails((current) => {
        const { [id]: _gone, ...rest } = current;
        return rest;
      });
      setSelectedId((current) => (current === id ? null : current));
      if (message) notify(message);
    },
    [notify],
  );

  const refreshConversation = useCallback(
    async (id: string) => {
      try {
        const changes = changedRef.current.get(id);
        const conversation = await api.getConversation(id);
        if (streamingRef.current.has(id)) return; // the stream is newer
        if (changedRef.current.get(id) !== changes) return conversation; // so is what changed it meanwhile
        setDetails((current) => ({ ...current, [id]: conversation }));
        setSummaries((current) =>
          current.some((summary) => summary.id === id)
            ? current.map((summary) => (summary.id === id ? summaryOf(conversation) : summary))
            : [summaryOf(conversation), ...current],
        );
        return conversation;
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) {
          drop(id, GONE_MESSAGE);
        } else if (!(error instanceof ApiError && error.status === 401)) {
          notify(`The conversation could not be loaded: ${(error as Error).message}`);
        }
        return undefined;
      }
    },
    [drop, notify],
  );

  /** Puts in a conversation the server just made (a new one, or one continued), and selects it. */
  const adopt = (created: Conversation) => {
    setDetails((all) => ({ ...all, [created.id]: created }));
    setSummaries((all) => [summaryOf(created), ...all.filter((summary) => summary.id !== created.id)]);
    setSelectedId(created.id);
  };

  /** The selected conversation, or a new one (selected) in `mode` when there is none. */
  const ensureConversation = async (mode: Mode, volumes: VolumeChoice[] = []): Promise<Conversation> => {
    if (selectedId) {
      const current = detailsRef.current[selectedId] ?? (await refreshConversation(selectedId));
      if (current) return current;
    }
    // The server names it after its first question or cell.
    const created = await api.createConversation({ mode, ...(volumes.length > 0 ? { volumes } : {}) });
    adopt(created);
    return created;
  };

  const setStreamingFlag = (id: string, on: boolean) => {
    if (on) streamingRef.current.add(id);
    else streamingRef.current.delete(id);
    setStreaming(Array.from(streamingRef.current));
  };

  /** Puts in the turn an upload answered with: newer than any copy of the conversation fetched before. */
  const addUploaded = (id: string, turn: Turn) => {
    changedRef.current.set(id, (changedRef.current.get(id) ?? 0) + 1);
    setDetails((all) => {
      const current = all[id];
      if (!current) return all;
      const turns = [...current.turns.filter((candidate) => candidate.id !== turn.id), turn];
      // The upload was the running turn, and it has ended: a copy of the conversation fetched while it ran
      // says busy, which kept the box from sending (Enter did nothing) until the next poll.
      return { ...all, [id]: { ...current, turns, turnCount: turns.length, busy: false } };
    });
  };

  /** Forgets them all (signed out: the next key may see others). */
  const clear = () => {
    setSummaries([]);
    setDetails({});
    setSelectedId(null);
  };

  const filesChanged = useCallback(() => setFilesVersion((value) => value + 1), []);
  const selected = selectedId ? details[selectedId] : undefined;
  const isStreaming = selectedId !== null && streaming.includes(selectedId);
  return {
    summaries,
    selectedId,
    /** The selected conversation's history, once loaded. */
    selected,
    /** Whether this page's own stream brings the selected conversation's running turn. */
    isStreaming,
    busy: selectedId !== null && (isStreaming || selected?.busy === true),
    /** Changes whenever the files may have changed (a turn ended, an upload). */
    filesVersion,
    filesChanged,
    select: setSelectedId,
    setSummaries,
    refreshSummaries,
    refreshConversation,
    drop,
    adopt,
    ensureConversation,
    setStreamingFlag,
    /** Folds one streamed event into the turn `turnId` of the conversation `id`. */
    foldEvent: (id: string, turnId: string, event: ConversationEvent) =>
      setDetails((all) => fold(all, id, turnId, event)),
    setModeOf: (id: string, mode: Mode) =>
      setDetails((all) => (all[id] ? { ...all, [id]: { ...all[id], mode } } : all)),
    addUploaded,
    clear,
  };
}
