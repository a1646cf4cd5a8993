/**
 * What an environment's build may reach. The layer runs in a network
 * namespace of its own (loopback alone); its one way out is a gate on the host
 * (src/network/) serving an allow-list made of: the hosts of the apt sources
 * of the root filesystem being built, the host of `python.indexUrl` (or those of
 * the index this machine's pip uses, when Python packages are named without one), the description's
 * `network.allow`, and `--allow-host`. `network: 'none'` builds offline: no gate.
 *
 * The hosts the build needs (apt's and the index's) are the operator's own
 * sources: the runtime was built from the same mirror. A mirror on the LAN or
 * on this host is common, so when such a name resolves to an address the gate
 * refuses by default, that address (as resolved now, on that port) is added
 * as a CIDR rule; a later answer pointing elsewhere is still refused.
 * The description's and `--allow-host`'s rules mean what they mean for a session.
 *
 * Every connection and refusal the gate logs is reported as build progress,
 * and the refusals are kept for the error a failed build throws.
 */
import { lookup } from 'node:dns/promises';
import { classifyAddress, createGateHost, type GateLog } from '../network/index.js';
import { resolveNetworkOption } from '../network/network-option.js';
import { hostPackageIndex, type PackageIndex } from '../network/package-index.js';
import { aptSourceHosts, ruleForUri } from './apt-sources.js';
import { type EnvironmentDescription, installsPythonPackages } from './description.js';

/** Refusals kept for a failed build's message. */
const MAX_REFUSALS_KEPT = 10;
/** How long a source's name may take to resolve before the build goes on without pinning it. */
const RESOLVE_TIMEOUT_MS = 5_000;

/** Every address of a name, or none when it does not resolve (the gate then says so at connect). */
export type BuildResolver = (host: string) => Promise<string[]>;

const resolveWithSystem: BuildResolver = async (host) => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string[]>((resolve) => {
    timer = setTimeout(() => resolve([]), RESOLVE_TIMEOUT_MS);
  });
  const answer = lookup(host, { all: true, verbatim: true }).then(
    (entries) => entries.map((entry) => entry.address),
    () => [],
  );
  return Promise.race([answer, timeout]).finally(() => clearTimeout(timer));
};

/**
 * The build's allow-list, or undefined for an offline build (`network: 'none'`). `allowHosts` is
 * `--allow-host`, checked like a session's `network.allow`.
 */
export async function buildAllowList(
  description: EnvironmentDescription,
  root: string,
  allowHosts: readonly string[] = [],
  resolve: BuildResolver = resolveWithSystem,
  packageIndex: () => PackageIndex = hostPackageIndex,
): Promise<string[] | undefined> {
  const extra = allowHosts.length > 0 ? (resolveNetworkOption({ allow: [...allowHosts] })?.allow ?? []) : [];
  // What an offline build cannot do was refused before the copy (offline-build.ts).
  if (description.network === 'none') return undefined;
  const needed = [...(await aptSourceHosts(root)), ...pythonIndexHosts(description, packageIndex)];
  const rules = [...needed, ...(await pinnedAddresses(needed, resolve))];
  rules.push(...(description.network?.allow ?? []), ...extra);
  return [...new Set(rules.map((rule) => rule.toLowerCase()))];
}

/**
 * The index's hosts: `python.indexUrl`'s, or, for packages named without one, those of the index this
 * machine's pip is configured for (package-index.ts), which the build's pip then uses too.
 */
function pythonIndexHosts(description: EnvironmentDescription, packageIndex: () => PackageIndex): string[] {
  const python = description.python;
  if (python.indexUrl !== undefined) {
    const rule = ruleForUri(python.indexUrl);
    if (rule === undefined) return [];
    // pip's default index links its files on another host, which pip names (when there is a pip to ask).
    let pipDefault: PackageIndex['pipDefault'] | undefined;
    try {
      pipDefault = packageIndex().pipDefault;
    } catch {
      return [rule];
    }
    return rule === ruleForUri(pipDefault.url) ? [rule, pipDefault.filesHost] : [rule];
  }
  return installsPythonPackages(description) && (python.packages.length > 0 || python.requirements !== undefined)
    ? packageIndex().rules
    : [];
}

/** CIDR rules for the addresses of the needed names that the gate would otherwise refuse. */
async function pinnedAddresses(rules: readonly string[], resolve: BuildResolver): Promise<string[]> {
  const pinned: string[] = [];
  for (const rule of rules) {
    const match = /^([a-z0-9.-]+)(?::(\d+))?$/.exec(rule);
    // Addresses and bracketed IPv6 are CIDR rules already.
    if (!match?.[1] || /^[0-9.]+$/.test(match[1])) continue;
    for (const address of await resolve(match[1])) {
      if (classifyAddress(address) === undefined) continue;
      const host = address.includes(':') ? `[${address}]` : address;
      pinned.push(match[2] ? `${host}:${match[2]}` : host);
    }
  }
  return pinned;
}

export interface BuildGate {
  /** The host path of the gate's socket, bound into the build sandbox. */
  socketPath: string;
  /** The gate's refusals so far, as lines for an error message (the last few). */
  refusals(): string[];
  close(): Promise<void>;
}

/** Starts the build's gate; each connection and refusal goes to `report` as it happens. */
export async function openBuildGate(options: {
  buildId: string;
  allow: readonly string[];
  report: (line: string) => void;
}): Promise<BuildGate> {
  const refusals: string[] = [];
  const host = createGateHost({
    logger: (entry) => {
      const line = describeLog(entry);
      if (entry.event === 'request-refused') {
        refusals.push(line);
        if (refusals.length > MAX_REFUSALS_KEPT) refusals.shift();
      }
      options.report(line);
    },
  });
  const channel = await host.openChannel({ sessionId: options.buildId, allow: options.allow });
  return { socketPath: channel.socketPath, refusals: () => [...refusals], close: () => channel.close() };
}

/** One line per gate log entry: what a user reading the build's output needs, no bodies. */
export function describeLog(entry: GateLog): string {
  if (entry.event === 'request-refused') {
    return `network gate refused ${entry.target ?? 'a request'} (${entry.status} ${entry.rule}): ${entry.message}`;
  }
  const kind = entry.kind === 'connect' ? 'tunnel to' : 'request to';
  return `network gate: ${kind} ${entry.host}:${entry.port} (${entry.address}), ${entry.bytesOut} bytes out, ${entry.bytesIn} in, ${entry.outcome}`;
}
