/**
 * A terminal in the session's sandbox, beside the chat and the notebook: xterm.js over the
 * terminal's WebSocket (binary frames both ways; resize as a control message). It fits its pane
 * and resizes the terminal with it. The terminal's id is kept per session in this tab's
 * sessionStorage, so a reload reattaches to the same shell and shows its recent output; a terminal
 * that ended (an `exit`, a pause of the session) says why, and another can be opened.
 */
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type TerminalInfo } from '../api';
import { allowTerminalStyles } from '../terminal-styles';
import { CloseIcon } from './Icons';

export interface TerminalPanelProps {
  sessionId: string;
  onError: (message: string) => void;
  onClose: () => void;
}

const storageKey = (sessionId: string) => `sandcell.terminal.${sessionId}`;

/** The terminal this tab had open for the session, if it is still open; else a new one. */
async function terminalFor(sessionId: string, size: { cols: number; rows: number }): Promise<TerminalInfo> {
  const kept = sessionStorage.getItem(storageKey(sessionId));
  if (kept) {
    const open = (await api.listTerminals(sessionId)).find((terminal) => terminal.id === kept);
    if (open) return open;
  }
  const terminal = await api.openTerminal(sessionId, size);
  sessionStorage.setItem(storageKey(sessionId), terminal.id);
  return terminal;
}

export function TerminalPanel({ sessionId, onError, onClose }: TerminalPanelProps) {
  const host = useRef<HTMLDivElement>(null);
  const [generation, setGeneration] = useState(0);
  const [ended, setEnded] = useState<string>();
  useEffect(() => {
    const element = host.current;
    if (!element) return;
    allowTerminalStyles(document);
    setEnded(undefined);
    const screen = new Terminal({ cursorBlink: true, fontSize: 13, scrollback: 5000, convertEol: false });
    const fit = new FitAddon();
    screen.loadAddon(fit);
    screen.open(element);
    fit.fit();
    let socket: WebSocket | undefined;
    let live = true;
    const encoder = new TextEncoder();
    const sendResize = () => {
      if (socket?.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify({ type: 'resize', cols: screen.cols, rows: screen.rows }));
      }
    };
    const observer = new ResizeObserver(() => {
      fit.fit();
      sendResize();
    });
    observer.observe(element);
    screen.onData((data) => {
      if (socket?.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
    });
    terminalFor(sessionId, { cols: screen.cols, rows: screen.rows }).then(
      (terminal) => {
        if (!live) return;
        socket = api.terminalSocket(terminal);
        socket.onopen = () => {
          sendResize();
          screen.focus();
        };
        socket.onmessage = (event) => {
          if (event.data instanceof ArrayBuffer) {
            screen.write(new Uint8Array(event.data));
            return;
          }
          const control = JSON.parse(String(event.data)) as {
            type: string;
            reason?: string | null;
            exitCode?: number | null;
          };
          if (control.type === 'exit') {
            sessionStorage.removeItem(storageKey(sessionId));
            setEnded(
              control.reason ??
                `The shell exited${control.exitCode === null ? '' : ` with status ${control.exitCode}`}.`,
            );
          }
        };
        socket.onclose = (event) => {
          if (live && event.code !== 1000) setEnded('The connection to the terminal was lost.');
        };
      },
      (error: Error) => {
        if (live) onError(`The terminal could not be opened: ${error.message}`);
      },
    );
    return () => {
      live = false;
      observer.disconnect();
      socket?.close();
      screen.dispose();
    };
  }, [sessionId, generation]);
  return (
    <aside class="terminal-panel" aria-label="Terminal">
      <header class="panel-header">
        <h2>Terminal</h2>
        <div class="panel-actions">
          <button
            type="button"
            class="icon-button"
            aria-label="Close the terminal pane"
            title="Close"
            onClick={onClose}
          >
            <CloseIcon />
          </button>
        </div>
      </header>
      {ended ? (
        <div class="banner banner-info terminal-ended" role="status">
          <span>The terminal ended: {ended}</span>
          <button type="button" class="small" onClick={() => setGeneration((value) => value + 1)}>
            New terminal
          </button>
        </div>
      ) : null}
      <div class="terminal-screen" ref={host} />
    </aside>
  );
}
