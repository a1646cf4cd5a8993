/**
 * The app's state and its conversation with the server: the config, the key
 * prompt, the conversations (summaries for the sidebar, full history for the
 * ones opened), the turns streaming in, notices, and the live region.
 *
 * Over 500 lines because it is the one owner of that state: its handlers
 * (start a turn, stop, decide, upload, continue, sign out) share the same
 * hooks and refs, and cut apart they would pass them all around. What does
 * not need them is elsewhere already: every view in components/, the HTTP
 * calls in api.ts, the event stream in event-stream.ts.
 */

import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import {
  type ApprovalMode,
  applyConversationEvent,
  type Conversation,
  type ConversationEvent,
  type ConversationSummary,
  formatBytes,
  type Turn,
} from '../../src/protocol/index';
import { ApiError, api, clearKey, download, onUnauthorized, type ServerConfig, storedKey, storeKey } from './api';
import type { Decision } from './components/CodeStep';
import { ConversationView, type Mode } from './components/ConversationView';
import { FilesPanel } from './components/FilesPanel';
import { CloseIcon } from './components/Icons';
import { LoginDialog } from './components/LoginDialog';
import { Sidebar } from './components/Sidebar';
import type { CellLanguage } from './languages';

interface Notice {
  id: number;
  kind: 'info' | 'error';
  text: string;
}

function idFromHash(): string | null {
  const match = /^#\/c\/([^/?#]+)/.exec(window.location.hash);
  return match?.[1] ? decodeURIComponent(match[1]) : null;
}

function summaryOf(conversation: Conversation): ConversationSummary {
  const { turns: _turns, ...summary } = conversation;
  return summary;
}

/** Folds one streamed event into the conversation's turn `turnId`. */
function fold(
  all: Record<string, Conversation>,
  conversationId: string,
  turnId: string,
  event: ConversationEvent,
): Record<string, Conversation> {
  const conversation = all[conversationId];
  if (!conversation) return all;
  let turns: Turn[];
  if (event.type === 'turn-start') {
    turns = [...conversation.turns.filter((turn) => turn.id !== event.turn.id), event.turn];
  } else {
    turns = conversation.turns.map((turn) => (turn.id === turnId ? applyConversationEvent(turn, event) : turn));
  }
  const busy = event.type === 'turn-start' ? true : event.type === 'turn-end' ? false : conversation.busy;
  return { ...all, [conversationId]: { ...conversation, turns, busy, turnCount: turns.length } };
}

/** The mode the conversation was left in; before any client chose one, what its latest turn was. */
function modeOf(conversation: Conversation, fallback: Mode): Mode {
  if (conversation.mode) return conversation.mode;
  const last = conversation.turns.findLast((turn) => turn.kind !== 'upload');
  return last ? (last.kind === 'cell' ? 'notebook' : 'chat') : fallback;
}

function describeEnd(turn: Turn): string {
  if (turn.status === 'error') return `Failed: ${turn.error?.message ?? 'an error occurred'}`;
  if (turn.status === 'cancelled') return 'Stopped.';
  if (turn.kind === 'cell') {
    const step = turn.steps[0];
    return step?.type === 'code' && step.status !== 'ok' ? `Cell finished: ${step.status}.` : 'Cell finished.';
  }
  return 'Answer complete.';
}

export function App() {
  const [config, setConfig] = useState<ServerConfig | null>(null);
  const [bootError, setBootError] = useState<string>();
  const [login, setLogin] = useState<{ error?: string } | null>(null);
  const [signedIn, setSignedIn] = useState(storedKey() !== null);
  const [summaries, setSummaries] = useState<ConversationSummary[]>([]);
  const [details, setDetails] = useState<Record<string, Conversation>>({});
  const [selectedId, setSelectedId] = useState<string | null>(idFromHash());
  const [streaming, setStreaming] = useState<string[]>([]);
  const [notices, setNotices] = useState<Notice[]>([]);
  const [drawerOpen, setDrawerOpen] = useState(false);
  const [draftMode, setDraftMode] = useState<Mode | null>(null);
  const [approval, setApproval] = useState<ApprovalMode | null>(null);
  const [filesOpen, setFilesOpen] = useState(false);
  const [filesVersion, setFilesVersion] = useState(0);
  const [announcement, setAnnouncement] = useState('');
  const streamingRef = useRef(new Set<string>());
  /** Per conversation, how many times this page changed it from a request's answer (an upload's): a fetch sent
   * before the latest of those brings an older copy, and is not applied. */
  const changedRef = useRef(new Map<string, number>());
  const detailsRef = useRef(details);
  detailsRef.current = details;
  const noticeSerial = useRef(0);

  const notify = useCallback((text: string, kind: Notice['kind'] = 'error') => {
    const id = ++noticeSerial.current;
    setNotices((current) => [...current.filter((notice) => notice.text !== text), { id, kind, text }].slice(-4));
    if (kind === 'info') {
      setTimeout(() => setNotices((current) => current.filter((notice) => notice.id !== id)), 6000);
    }
  }, []);
  const dismiss = (id: number) => setNotices((current) => current.filter((notice) => notice.id !== id));

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

  const load = useCallback(async () => {
    try {
      const loaded = await api.config();
      setConfig(loaded);
      setApproval((current) => current ?? loaded.approvalDefault);
      setSummaries(await api.listConversations());
      setBootError(undefined);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return; // the key prompt is up
      setBootError((error as Error).message);
    }
  }, []);

  useEffect(() => {
    onUnauthorized(() => {
      const hadKey = storedKey() !== null;
      if (hadKey) {
        clearKey();
        setSignedIn(false);
      }
      setLogin((current) => current ?? (hadKey ? { error: 'Your saved key is no longer accepted.' } : {}));
    });
    void load();
    const onHash = () => setSelectedId(idFromHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, [load]);

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
          drop(
            id,
            'That conversation is no longer on the server (it may have restarted), so it was removed from the list.',
          );
        } else if (!(error instanceof ApiError && error.status === 401)) {
          notify(`The conversation could not be loaded: ${(error as Error).message}`);
        }
        return undefined;
      }
    },
    [drop, notify],
  );

  // Keep the address in step with the selection, and load what is selected.
  useEffect(() => {
    const hash = selectedId ? `#/c/${encodeURIComponent(selectedId)}` : '';
    if (window.location.hash !== hash) {
      history.replaceState(null, '', `${window.location.pathname}${window.location.search}${hash}`);
    }
    if (selectedId && login === null) void refreshConversation(selectedId);
  }, [selectedId, login === null, refreshConversation]);

  const selected = selectedId ? details[selectedId] : undefined;
  const isStreaming = selectedId !== null && streaming.includes(selectedId);
  const following = selected?.busy === true && !isStreaming;

  // A turn that runs without our stream (after a reload, or a dropped connection): follow it by polling.
  useEffect(() => {
    if (!following || !selectedId) return;
    const id = selectedId;
    const timer = setInterval(async () => {
      const conversation = await refreshConversation(id);
      if (conversation && !conversation.busy) {
        setFilesVersion((value) => value + 1);
        const last = conversation.turns[conversation.turns.length - 1];
        if (last) setAnnouncement(describeEnd(last));
      }
    }, 1000);
    return () => clearInterval(timer);
  }, [following, selectedId, refreshConversation]);

  const defaultMode: Mode = config?.model === null ? 'notebook' : 'chat';
  const mode: Mode = selected ? modeOf(selected, defaultMode) : (draftMode ?? defaultMode);
  /** The mode is kept with the conversation on the server, so a reload or another browser reopens it the same. */
  const setMode = (next: Mode) => {
    if (!selectedId || !selected) {
      setDraftMode(next);
      return;
    }
    if (next === mode) return;
    const id = selectedId;
    setDetails((all) => (all[id] ? { ...all, [id]: { ...all[id], mode: next } } : all));
    api.setMode(id, next).catch((error: unknown) => handleError(id, error));
  };

  /** The selected conversation, or a new one (selected) when there is none. */
  const ensureConversation = async (): Promise<Conversation> => {
    if (selectedId) {
      const current = detailsRef.current[selectedId] ?? (await refreshConversation(selectedId));
      if (current) return current;
    }
    // The server names it after its first question or cell.
    const created = await api.createConversation({ mode });
    setDetails((all) => ({ ...all, [created.id]: created }));
    setSummaries((all) => [summaryOf(created), ...all.filter((summary) => summary.id !== created.id)]);
    setSelectedId(created.id);
    return created;
  };

  /** Goes on from a conversation whose session is gone, in a new one the server seeds with its history. */
  const continueConversation = async (id: string) => {
    try {
      const created = await api.continueConversation(id);
      setDetails((all) => ({ ...all, [created.id]: created }));
      setSummaries((all) => [summaryOf(created), ...all.filter((summary) => summary.id !== created.id)]);
      setSelectedId(created.id);
    } catch (error) {
      handleError(id, error);
    }
  };

  const handleError = (id: string | undefined, error: unknown) => {
    if (!(error instanceof ApiError)) {
      notify((error as Error).message ?? String(error));
      return;
    }
    if (error.status === 401) notify('Sign in, then try again.', 'info');
    else if (error.status === 404 && id && error.code === 'conversation-not-found') {
      drop(
        id,
        'That conversation is no longer on the server (it may have restarted), so it was removed from the list.',
      );
    } else if (error.status === 410 && id) {
      notify("This conversation's session is gone: continue it in a new session to go on.");
      void refreshConversation(id);
    } else if (error.code === 'conversation-busy' && id) {
      notify('Something is still running in this conversation: wait for it or stop it.');
      void refreshConversation(id);
    } else if (error.code === 'model-not-configured') {
      notify(error.message);
      void load();
    } else if (error.status === 413) {
      notify(
        `Too large for the server (it accepts up to ${formatBytes(config?.maxUploadBytes ?? 0)}): ${error.message}`,
      );
    } else notify(error.message);
  };

  const setStreamingFlag = (id: string, on: boolean) => {
    if (on) streamingRef.current.add(id);
    else streamingRef.current.delete(id);
    setStreaming(Array.from(streamingRef.current));
  };

  /** Runs a streamed turn; resolves true once the server started it, false when it refused. */
  const startTurn = (
    id: string,
    run: (onEvent: (event: ConversationEvent) => void) => Promise<boolean>,
  ): Promise<boolean> => {
    setStreamingFlag(id, true);
    let turnId: string | undefined;
    let resolveStarted: (started: boolean) => void = () => {};
    const started = new Promise<boolean>((resolve) => {
      resolveStarted = resolve;
    });
    const onEvent = (event: ConversationEvent) => {
      if (event.type === 'turn-start') {
        turnId = event.turn.id;
        resolveStarted(true);
        setAnnouncement(event.turn.kind === 'cell' ? 'Running the cell…' : 'Working on your question…');
        void refreshSummaries(); // the first question or cell names the conversation
      }
      const current = turnId;
      if (current === undefined) return;
      setDetails((all) => fold(all, id, current, event));
      if (event.type === 'turn-end') setAnnouncement(describeEnd(event.turn));
    };
    run(onEvent)
      .then((ended) => {
        resolveStarted(turnId !== undefined);
        setStreamingFlag(id, false);
        // Broken off before the end: the turn goes on on the server; GET shows it (and polling follows it).
        if (!ended) void refreshConversation(id);
      })
      .catch((error: unknown) => {
        resolveStarted(false);
        setStreamingFlag(id, false);
        handleError(id, error);
      })
      .finally(() => {
        setFilesVersion((value) => value + 1);
        void refreshSummaries();
      });
    return started;
  };

  /** Starts a turn in the open conversation, creating the conversation first when none is open. */
  const startInConversation = async (
    run: (id: string, onEvent: (event: ConversationEvent) => void) => Promise<boolean>,
  ): Promise<boolean> => {
    let conversation: Conversation;
    try {
      conversation = await ensureConversation();
    } catch (error) {
      handleError(undefined, error);
      return false;
    }
    return startTurn(conversation.id, (onEvent) => run(conversation.id, onEvent));
  };

  const sendMessage = (text: string): Promise<boolean> =>
    startInConversation((id, onEvent) => api.sendMessage(id, text, approval ?? 'auto', onEvent));

  const runCell = (code: string, language: CellLanguage): Promise<boolean> =>
    startInConversation((id, onEvent) => api.runCell(id, code, language, onEvent));

  const stop = async () => {
    if (!selectedId) return;
    try {
      await api.cancel(selectedId);
      setAnnouncement('Stopping…');
    } catch (error) {
      handleError(selectedId, error);
    }
  };

  const decide = async (approvalId: string, decision: Decision, code?: string) => {
    if (!selectedId) return;
    await api.decide(selectedId, approvalId, decision, code);
  };

  const upload = async (chosen: File[]) => {
    const limit = config?.maxUploadBytes ?? Number.POSITIVE_INFINITY;
    const tooLarge = chosen.filter((file) => file.size > limit);
    if (tooLarge.length > 0) {
      notify(
        `${tooLarge.map((file) => file.name).join(', ')} ${tooLarge.length === 1 ? 'is' : 'are'} larger than the server accepts (${formatBytes(limit)}).`,
      );
    }
    const files = chosen.filter((file) => file.size <= limit);
    if (files.length === 0) return;
    let conversation: Conversation;
    try {
      conversation = await ensureConversation();
    } catch (error) {
      handleError(undefined, error);
      return;
    }
    const names = files.map((file) => file.name).join(', ');
    setAnnouncement(`Uploading ${names}…`);
    notify(`Uploading ${names}…`, 'info');
    try {
      const turn = await api.upload(conversation.id, files);
      changedRef.current.set(conversation.id, (changedRef.current.get(conversation.id) ?? 0) + 1);
      setDetails((all) => {
        const current = all[conversation.id];
        if (!current) return all;
        const turns = [...current.turns.filter((candidate) => candidate.id !== turn.id), turn];
        // The upload was the running turn, and it has ended: a copy of the conversation fetched while it ran
        // says busy, which kept the box from sending (Enter did nothing) until the next poll.
        return { ...all, [conversation.id]: { ...current, turns, turnCount: turns.length, busy: false } };
      });
      setNotices((current) => current.filter((notice) => !notice.text.startsWith('Uploading ')));
      setAnnouncement(`Added ${names}.`);
      setFilesVersion((value) => value + 1);
      void refreshSummaries();
    } catch (error) {
      setNotices((current) => current.filter((notice) => !notice.text.startsWith('Uploading ')));
      handleError(conversation.id, error);
    }
  };

  const exportNotebook = () => {
    if (!selected) return;
    download(api.notebookUrl(selected.id), 'conversation.ipynb').catch((error) => handleError(selected.id, error));
  };

  const remove = async (id: string) => {
    try {
      await api.deleteConversation(id);
      drop(id);
      notify('Conversation deleted.', 'info');
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) drop(id);
      else handleError(id, error);
    }
  };

  const submitKey = async (key: string, remember: boolean) => {
    try {
      await api.checkKey(key);
    } catch (error) {
      setLogin({
        error:
          error instanceof ApiError && error.status === 401
            ? 'That key was not accepted. Check it and try again.'
            : `The server could not check the key: ${(error as Error).message}`,
      });
      return;
    }
    storeKey(key, remember);
    setSignedIn(true);
    setLogin(null);
    await load();
  };

  const signOut = () => {
    clearKey();
    setSignedIn(false);
    setSummaries([]);
    setDetails({});
    setSelectedId(null);
    void load();
  };

  if (bootError && !config) {
    return (
      <div class="boot-error" role="alert">
        <h1>sandcell</h1>
        <p>The server could not be reached: {bootError}</p>
        <button type="button" class="button-primary" onClick={() => void load()}>
          Try again
        </button>
      </div>
    );
  }

  const busy = selectedId !== null && (isStreaming || selected?.busy === true);
  return (
    <>
      <div class={`app${drawerOpen ? ' drawer-open' : ''}`} inert={login !== null}>
        <Sidebar
          conversations={summaries}
          selectedId={selectedId}
          config={config}
          signedIn={signedIn}
          open={drawerOpen}
          onClose={() => setDrawerOpen(false)}
          onNew={() => {
            setSelectedId(null);
            setDraftMode(null);
            setDrawerOpen(false);
          }}
          onSelect={(id) => {
            setSelectedId(id);
            setDrawerOpen(false);
          }}
          onDelete={(id) => void remove(id)}
          onSignOut={signOut}
        />
        <ConversationView
          conversation={selected}
          config={config}
          mode={mode}
          onModeChange={setMode}
          approval={approval ?? 'auto'}
          onApprovalChange={setApproval}
          busy={busy}
          filesOpen={filesOpen}
          onToggleFiles={() => setFilesOpen((open) => !open)}
          onOpenDrawer={() => setDrawerOpen(true)}
          drawerOpen={drawerOpen}
          onSend={sendMessage}
          onRunCell={runCell}
          onStop={() => void stop()}
          onDecide={decide}
          onUpload={(files) => void upload(files)}
          onExport={exportNotebook}
          onNew={() => {
            setSelectedId(null);
            setDraftMode(null);
          }}
          onError={(message) => notify(message)}
          onContinue={() => selected && void continueConversation(selected.id)}
        />
        {filesOpen ? (
          <FilesPanel
            sessionId={selected?.sessionId}
            expired={selected?.status === 'expired'}
            version={filesVersion}
            onUpload={(files) => void upload(files)}
            onError={(message) => notify(message)}
            onClose={() => setFilesOpen(false)}
            uploadDisabled={selected?.status === 'expired' ? 'This conversation has expired.' : undefined}
          />
        ) : null}
      </div>
      <div class="notices" aria-live="assertive">
        {notices.map((notice) => (
          <div
            key={notice.id}
            class={`notice notice-${notice.kind}`}
            role={notice.kind === 'error' ? 'alert' : 'status'}
          >
            <span>{notice.text}</span>
            <button type="button" class="icon-button" aria-label="Dismiss" onClick={() => dismiss(notice.id)}>
              <CloseIcon />
            </button>
          </div>
        ))}
      </div>
      <div class="visually-hidden" aria-live="polite" role="status">
        {announcement}
      </div>
      {login !== null ? <LoginDialog error={login.error} onSubmit={submitKey} /> : null}
    </>
  );
}
