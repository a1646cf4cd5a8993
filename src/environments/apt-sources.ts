/**
 * The hosts apt fetches from, read from a root filesystem's own apt sources
 * (`/etc/apt/sources.list`, `sources.list.d/*.list` in the one-line form and
 * `sources.list.d/*.sources` in deb822), as allow-list rules for the build's
 * gate. Only http and https sources reach the network; `file:`, `cdrom:` and
 * the like need no rule.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/** A sources file larger than this is not read (a real one is a few lines). */
const MAX_SOURCES_FILE_BYTES = 256 * 1024;
const MAX_SOURCES_FILES = 100;

/** Allow-list rules for every http(s) host the root filesystem's apt sources name, without repeats. */
export async function aptSourceHosts(root: string): Promise<string[]> {
  const apt = path.join(root, 'etc/apt');
  const texts: { text: string; deb822: boolean }[] = [];
  const main = await readBounded(path.join(apt, 'sources.list'));
  if (main !== undefined) texts.push({ text: main, deb822: false });
  const parts = (await readdir(path.join(apt, 'sources.list.d')).catch(() => [] as string[])).sort();
  for (const name of parts.slice(0, MAX_SOURCES_FILES)) {
    const deb822 = name.endsWith('.sources');
    if (!deb822 && !name.endsWith('.list')) continue;
    const text = await readBounded(path.join(apt, 'sources.list.d', name));
    if (text !== undefined) texts.push({ text, deb822 });
  }
  const uris = texts.flatMap(({ text, deb822 }) => (deb822 ? deb822Uris(text) : oneLineUris(text)));
  return [...new Set(uris.flatMap((uri) => ruleForUri(uri) ?? []))];
}

/** `deb [options] URI suite [components]` and `deb-src …`; comments and blank lines skipped. */
export function oneLineUris(text: string): string[] {
  const uris: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    const match = /^deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?(\S+)/.exec(line);
    if (match?.[1]) uris.push(match[1]);
  }
  return uris;
}

/** deb822 stanzas: the `URIs:` field of each stanza not marked `Enabled: no`. */
export function deb822Uris(text: string): string[] {
  const uris: string[] = [];
  const stanzas = text.split(/\n[ \t]*\n/);
  for (const stanza of stanzas) {
    const fields = new Map<string, string>();
    let current: string | undefined;
    for (const line of stanza.split('\n')) {
      if (line.startsWith('#')) continue;
      if (/^[ \t]/.test(line) && current) {
        fields.set(current, `${fields.get(current)} ${line.trim()}`);
        continue;
      }
      const field = /^([A-Za-z0-9-]+):(.*)$/.exec(line);
      if (!field?.[1]) continue;
      current = field[1].toLowerCase();
      fields.set(current, (field[2] ?? '').trim());
    }
    if (fields.get('enabled')?.toLowerCase() === 'no') continue;
    uris.push(...(fields.get('uris') ?? '').split(/\s+/).filter((uri) => uri !== ''));
  }
  return uris;
}

/** `deb.debian.org`, or `host:port` when the port is not 80 or 443; undefined when apt does not go out for it. */
export function ruleForUri(uri: string): string | undefined {
  // apt's transports wrap http(s): `mirror+http://…` fetches a mirror list from there, `tor+https://…` goes over tor.
  const bare = uri.replace(/^(?:mirror|tor)\+/, '');
  let url: URL;
  try {
    url = new URL(bare);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.hostname === '') return undefined;
  return url.port === '' ? url.hostname : `${url.hostname}:${url.port}`;
}

async function readBounded(file: string): Promise<string | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  return text !== undefined && text.length <= MAX_SOURCES_FILE_BYTES ? text : undefined;
}
