/** "App on port 8000": the apps the session serves, each with its preview beside the chat and a tab of its own. */
import type { ListeningPort } from '../api';

export interface AppsBarProps {
  ports: ListeningPort[];
  previewing: number | undefined;
  onPreview: (port: number) => void;
  onOpenTab: (port: number) => void;
}

export function AppsBar({ ports, previewing, onPreview, onOpenTab }: AppsBarProps) {
  if (ports.length === 0) return null;
  return (
    <section class="apps-bar" aria-label="Apps this session serves">
      {ports.map(({ port }) => (
        <div key={port} class="app-chip">
          <span class="app-chip-label">App on port {port}</span>
          <button
            type="button"
            class={`small${previewing === port ? ' is-pressed' : ''}`}
            aria-pressed={previewing === port}
            onClick={() => onPreview(port)}
          >
            Preview
          </button>
          <button type="button" class="small button-quiet" onClick={() => onOpenTab(port)}>
            Open in a tab
          </button>
        </div>
      ))}
    </section>
  );
}
