/**
 * The Python package index this machine's pip is configured for, as gate rules: what
 * `packageIndex: true` on a session's network (and `--allow-package-index`) lets a sandbox's
 * `pip install` reach, and nothing more. sandcell names no index itself: it asks the host's pip
 * (`python3`'s, on PATH) what `pip install` would use — its configuration files and PIP_* variables,
 * or pip's own default when nothing is set — once per process.
 *
 * Each http(s) index becomes a rule for its host (and port, when not the scheme's default); PyPI's
 * index also serves its files from another host, which pip itself names. An index on this
 * machine's loopback is `host.sandcell.internal` to a sandbox; an index host that resolves now to an
 * address the gate refuses by default (a mirror on the LAN) is allowed at that address too. What a sandbox cannot reach (a
 * `file://` index, local `find-links`) is left out and said in `unreachable`. Where the index is not
 * pip's default, the sandbox's pip is pointed at it too (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL). An index
 * URL with credentials is refused: they would be readable by the sandbox's code.
 */
import { execFileSync } from 'node:child_process';
import { InvalidInputError } from '../errors.js';
import { classifyAddress } from './address-class.js';

export interface PackageIndex {
  /** The gate rules that reach the index and its files. */
  rules: string[];
  /** What the sandbox's pip needs to use the same index (empty when it is pip's default). */
  environment: Record<string, string>;
  /** Indexes the host's pip uses that a sandbox cannot reach, as configured. */
  unreachable: string[];
  /** pip's own default index, and the host it serves its files from (for a build that names that index). */
  pipDefault: { url: string; filesHost: string };
}

/** Asks pip for what `pip install` would use, from pip's own option parser and its defaults. */
const ASK_PIP = `
import json, socket, urllib.parse
from pip._internal.commands import create_command
from pip._internal.models.index import PyPI
options, _ = create_command("install").parse_args([])
hosts = {PyPI.file_storage_domain}
for url in [options.index_url, *options.extra_index_urls]:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("http", "https") and parts.hostname:
        hosts.add(parts.hostname)
addresses = {}
for host in hosts:
    try:
        addresses[host] = sorted({info[4][0] for info in socket.getaddrinfo(host, None)})
    except OSError:
        addresses[host] = []
print(json.dumps({"index": options.index_url, "extras": options.extra_index_urls, "noIndex": options.no_index,
                  "default": PyPI.simple_url, "defaultFiles": PyPI.file_storage_domain, "addresses": addresses}))
`;

interface PipAnswer {
  index: string;
  extras: string[];
  noIndex: boolean;
  default: string;
  defaultFiles: string;
  /** What each index host resolves to now, as this machine's resolver says. */
  addresses?: Record<string, string[]>;
}

/** How the host's pip is asked; tests give their own configuration through PIP_* variables. */
export type AskPip = () => PipAnswer;

export const askHostPip: AskPip = () => {
  let output: string;
  try {
    output = execFileSync('python3', ['-c', ASK_PIP], {
      encoding: 'utf8',
      timeout: 30_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.trim().split('\n').at(-1) ?? (error as Error).message;
    throw new InvalidInputError(
      `The package index is what this machine's pip is configured for, and \`python3 -m pip\` could not say (${detail}). Install pip, or name the index's hosts in the allow-list.`,
    );
  }
  return JSON.parse(output) as PipAnswer;
};

let cached: PackageIndex | undefined;

/** The host pip's index as rules and environment; asked once per process. */
export function hostPackageIndex(ask: AskPip = askHostPip): PackageIndex {
  if (ask !== askHostPip) return packageIndexOf(ask());
  cached ??= packageIndexOf(ask());
  return cached;
}

export function packageIndexOf(answer: PipAnswer): PackageIndex {
  if (answer.noIndex) {
    throw new InvalidInputError(
      "This machine's pip is configured with no index (`no-index`): there is no package index to allow.",
    );
  }
  const rules: string[] = [];
  const unreachable: string[] = [];
  const reachable: string[] = [];
  for (const url of [answer.index, ...answer.extras]) {
    const parsed = URL.canParse(url) ? new URL(url) : undefined;
    if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')) {
      unreachable.push(url);
      continue;
    }
    if (parsed.username || parsed.password) {
      throw new InvalidInputError(
        `This machine's pip reaches the index at ${parsed.host} with credentials in its URL; a sandbox's code could read them, so sandcell does not pass them on. Allow the index's host and give its credentials as a secret header (--secret-header) instead.`,
      );
    }
    const { rule, sandboxUrl } = asSandboxSees(parsed);
    rules.push(rule, ...pinned(parsed.hostname, parsed.port, answer.addresses));
    reachable.push(sandboxUrl);
    if (url === answer.default) rules.push(answer.defaultFiles, ...pinned(answer.defaultFiles, '', answer.addresses));
  }
  if (reachable.length === 0) {
    throw new InvalidInputError(
      `This machine's pip uses only indexes a sandbox cannot reach (${unreachable.join(', ')}): there is no package index to allow.`,
    );
  }
  const [index, ...extras] = reachable;
  const environment: Record<string, string> = {};
  if (index !== answer.index || answer.index !== answer.default) environment.PIP_INDEX_URL = index as string;
  if (extras.length > 0) environment.PIP_EXTRA_INDEX_URL = extras.join(' ');
  return {
    rules: [...new Set(rules.map((rule) => rule.toLowerCase()))],
    environment,
    unreachable,
    pipDefault: { url: answer.default, filesHost: answer.defaultFiles },
  };
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * The index is the operator's own choice, and a mirror on the LAN (or behind a proxy with a
 * reserved address) is common: where its name resolves now to an address the gate refuses by
 * default, that address is allowed too, as an environment build's sources are (build-network.ts).
 * A later answer pointing elsewhere is still refused. This machine's own addresses are not.
 */
function pinned(hostname: string, port: string, addresses: Record<string, string[]> | undefined): string[] {
  if (LOOPBACK.test(hostname)) return [];
  return (addresses?.[hostname] ?? [])
    .filter((address) => {
      const refusedAs = classifyAddress(address);
      return (
        refusedAs !== undefined &&
        refusedAs !== 'loopback' &&
        refusedAs !== 'this-host' &&
        refusedAs !== 'not-an-address'
      );
    })
    .map((address) => {
      const host = address.includes(':') ? `[${address}]` : address;
      return port ? `${host}:${port}` : host;
    });
}

/** The gate rule for an index URL, and the URL as the sandbox must write it. */
function asSandboxSees(url: URL): { rule: string; sandboxUrl: string } {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  if (LOOPBACK.test(url.hostname)) {
    // This machine's loopback is host.sandcell.internal inside a sandbox.
    const moved = new URL(url.href);
    moved.hostname = 'host.sandcell.internal';
    return { rule: `host.sandcell.internal:${port}`, sandboxUrl: moved.href };
  }
  return { rule: url.port ? `${url.hostname}:${url.port}` : url.hostname, sandboxUrl: url.href };
}
