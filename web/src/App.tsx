/**
 * The page, composed: its state (state/, one hook for each part) and its
 * views (components/). The sidebar lists the conversations, the main view
 * shows the selected one, the files panel its session's files and the key's
 * volumes; the notices
 * and the live region speak to the user, and the key prompt goes over all
 * when the server asks for a key.
 */
import { useState } from 'preact/hooks';
import { api } from './api';
import { BootError } from './components/BootError';
import { ConversationView } from './components/ConversationView';
import { FilesPanel } from './components/FilesPanel';
import { LoginDialog } from './components/LoginDialog';
import { Notices } from './components/Notices';
import { PreviewPanel } from './components/PreviewPanel';
import { Sidebar } from './components/Sidebar';
import { TerminalPane } from './components/TerminalPane';
import { VolumesPanel } from './components/VolumesPanel';
import { useActions } from './state/actions';
import { useAddress } from './state/address';
import { useConversations } from './state/conversations';
import { useFollowTurn } from './state/follow-turn';
import { useNotices } from './state/notices';
import { usePorts } from './state/ports';
import { useServer } from './state/server';

/**
 * Opens the app on `port` in a tab of its own, through a preview link. The tab is opened at once,
 * while the click still counts as the user's (a tab opened after the link came would be blocked),
 * and sent to the link once it is made; it has no way back to this page.
 */
function openInTab(sessionId: string, port: number, notify: (message: string) => void): void {
  const tab = window.open('about:blank', '_blank');
  if (tab) tab.opener = null;
  api.previewLink(sessionId, port).then(
    (link) => {
      if (tab) tab.location.href = link.url;
      else notify(`The app on port ${port} is at ${link.url}`);
    },
    (error: Error) => {
      tab?.close();
      notify(`The app on port ${port} could not be opened: ${error.message}`);
    },
  );
}

export function App() {
  const notices = useNotices();
  const conversations = useConversations(notices.notify);
  const server = useServer({ onConversations: conversations.setSummaries, onSignOut: conversations.clear });
  useAddress({
    selectedId: conversations.selectedId,
    select: conversations.select,
    active: server.login === null,
    load: conversations.refreshConversation,
  });
  useFollowTurn(conversations, notices.announce);
  const actions = useActions({ conversations, server, notices });
  const [drawerOpen, setDrawerOpen] = useState(false);
  const [filesOpen, setFilesOpen] = useState(false);
  const [terminalOpen, setTerminalOpen] = useState(false);
  const selectedSession = conversations.selected?.sessionId;
  const expiredSession = conversations.selected?.status === 'expired';
  const ports = usePorts(selectedSession, expiredSession, conversations.filesVersion);
  const [preview, setPreview] = useState<{ sessionId: string; port: number }>();
  const previewing = preview && preview.sessionId === selectedSession ? preview.port : undefined;

  if (server.bootError && !server.config) {
    return <BootError message={server.bootError} onRetry={() => void server.load()} />;
  }

  const { selected } = conversations;
  const notify = (message: string) => notices.notify(message);
  const upload = (files: File[]) => void actions.upload(files);
  return (
    <>
      <div class={`app${drawerOpen ? ' drawer-open' : ''}`} inert={server.login !== null}>
        <Sidebar
          conversations={conversations.summaries}
          selectedId={conversations.selectedId}
          config={server.config}
          signedIn={server.signedIn}
          open={drawerOpen}
          onClose={() => setDrawerOpen(false)}
          onNew={() => {
            actions.newConversation();
            setDrawerOpen(false);
          }}
          onSelect={(id) => {
            conversations.select(id);
            setDrawerOpen(false);
          }}
          onDelete={(id) => void actions.remove(id)}
          onSignOut={server.signOut}
        />
        <ConversationView
          conversation={selected}
          config={server.config}
          mode={actions.mode}
          onModeChange={actions.setMode}
          approval={server.approval}
          onApprovalChange={server.setApproval}
          busy={conversations.busy}
          filesOpen={filesOpen}
          onToggleFiles={() => setFilesOpen((open) => !open)}
          terminalOpen={terminalOpen}
          terminalAvailable={selectedSession !== undefined && !expiredSession}
          onToggleTerminal={() => setTerminalOpen((open) => !open)}
          onOpenDrawer={() => setDrawerOpen(true)}
          drawerOpen={drawerOpen}
          onSend={actions.sendMessage}
          onRunCell={actions.runCell}
          onStop={() => void actions.stop()}
          onDecide={actions.decide}
          onUpload={upload}
          onExport={actions.exportNotebook}
          onNew={actions.newConversation}
          onError={notify}
          onContinue={() => selected && void actions.continueConversation(selected.id)}
          ports={ports}
          previewing={previewing}
          onPreview={(port) =>
            selectedSession &&
            setPreview((current) =>
              current?.port === port && current.sessionId === selectedSession
                ? undefined
                : { sessionId: selectedSession, port },
            )
          }
          onOpenTab={(port) => selectedSession && openInTab(selectedSession, port, notify)}
        />
        {previewing !== undefined && selectedSession ? (
          <PreviewPanel
            sessionId={selectedSession}
            port={previewing}
            onError={notify}
            onClose={() => setPreview(undefined)}
          />
        ) : null}
        {terminalOpen && selectedSession && !expiredSession ? (
          <TerminalPane
            key={selectedSession}
            sessionId={selectedSession}
            onError={notify}
            onClose={() => setTerminalOpen(false)}
          />
        ) : null}
        {filesOpen ? (
          <FilesPanel
            sessionId={selected?.sessionId}
            expired={selected?.status === 'expired'}
            version={conversations.filesVersion}
            onUpload={upload}
            onError={notify}
            onClose={() => setFilesOpen(false)}
            uploadDisabled={selected?.status === 'expired' ? 'This conversation has expired.' : undefined}
          >
            <VolumesPanel
              mounted={selected ? (selected.volumes ?? []) : undefined}
              chosen={actions.draftVolumes}
              onChoose={actions.setDraftVolumes}
              version={conversations.filesVersion}
              onError={notify}
            />
          </FilesPanel>
        ) : null}
      </div>
      <Notices notices={notices.notices} onDismiss={notices.dismiss} />
      <div class="visually-hidden" aria-live="polite" role="status">
        {notices.announcement}
      </div>
      {server.login !== null ? <LoginDialog error={server.login.error} onSubmit={server.submitKey} /> : null}
    </>
  );
}
