/**
 * The address names the selected conversation (`#/c/<id>`), so a reload or a
 * link opens it again: kept in step with the selection both ways.
 */
import { useEffect } from 'preact/hooks';

export function idFromHash(): string | null {
  const match = /^#\/c\/([^/?#]+)/.exec(window.location.hash);
  return match?.[1] ? decodeURIComponent(match[1]) : null;
}

export interface AddressOptions {
  selectedId: string | null;
  /** Selects what the address names when the user changes it (back, forward, a link). */
  select: (id: string | null) => void;
  /** Whether the selected conversation may be loaded now: not while the key prompt is up. */
  active: boolean;
  load: (id: string) => unknown;
}

/** Follows the address, writes the selection into it, and loads what is selected. */
export function useAddress({ selectedId, select, active, load }: AddressOptions): void {
  useEffect(() => {
    const onHash = () => select(idFromHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, [select]);

  useEffect(() => {
    const hash = selectedId ? `#/c/${encodeURIComponent(selectedId)}` : '';
    if (window.location.hash !== hash) {
      history.replaceState(null, '', `${window.location.pathname}${window.location.search}${hash}`);
    }
    if (selectedId && active) void load(selectedId);
  }, [selectedId, active, load]);
}
