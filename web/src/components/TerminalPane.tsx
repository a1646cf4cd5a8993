/**
 * The terminal pane, loaded when first opened: xterm.js is most of the page's script by size, and
 * most visits never open a terminal.
 */
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { TerminalPanelProps } from './TerminalPanel';

let loaded: ComponentType<TerminalPanelProps> | undefined;

export function TerminalPane(props: TerminalPanelProps) {
  const [Panel, setPanel] = useState(() => loaded);
  useEffect(() => {
    if (loaded) return;
    import('./TerminalPanel').then(
      (module) => {
        loaded = module.TerminalPanel;
        setPanel(() => loaded);
      },
      (error: Error) => props.onError(`The terminal could not be loaded: ${error.message}`),
    );
  }, []);
  if (!Panel) {
    return (
      <aside class="terminal-panel" aria-label="Terminal">
        <p class="muted panel-body">Opening…</p>
      </aside>
    );
  }
  return <Panel {...props} />;
}
