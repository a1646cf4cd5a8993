/**
 * Machines on one host, for the cluster's tests: each node a network
 * namespace (`ip netns`, as root) with its own address, all on one link, with
 * the host on it too (where HAProxy stands in for a Kubernetes Service). The
 * link's bridge lives in a namespace of its own: the host's firewall (Docker's
 * sets FORWARD to DROP, and bridged traffic passes through it) never sees the
 * nodes' traffic. Everything made here is removed by `close()`, and only that.
 */
import { execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';

export interface NetnsLink {
  /** The host's address on the link. */
  readonly hostAddress: string;
  /** Node `index`'s namespace (from 1) and address. */
  namespaceOf(index: number): string;
  addressOf(index: number): string;
  /** Adds node `index` to the link (its namespace, its address). */
  addNode(index: number): void;
  close(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** Why these tests cannot run here, or undefined when they can. */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'no `ip` (iproute2)';
  }
  return undefined;
}

export function createNetnsLink(): NetnsLink {
  // Short names: an interface's is at most 15 characters.
  const id = `sc${randomInt(36 ** 3)
    .toString(36)
    .padStart(3, '0')}`;
  const subnet = `10.213.${randomInt(1, 250)}`;
  const switchNs = `${id}sw`;
  const nodes = new Set<number>();
  const hostLink = `${id}h`;
  ip('netns', 'add', switchNs);
  try {
    ip('-n', switchNs, 'link', 'set', 'lo', 'up');
    ip('-n', switchNs, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', switchNs, 'link', 'set', 'br0', 'up');
    ip('link', 'add', hostLink, 'type', 'veth', 'peer', 'name', `${id}hb`, 'netns', switchNs);
    ip('addr', 'add', `${subnet}.1/24`, 'dev', hostLink);
    ip('link', 'set', hostLink, 'up');
    ip('-n', switchNs, 'link', 'set', `${id}hb`, 'master', 'br0');
    ip('-n', switchNs, 'link', 'set', `${id}hb`, 'up');
  } catch (error) {
    ip('netns', 'del', switchNs);
    throw error;
  }
  const link: NetnsLink = {
    hostAddress: `${subnet}.1`,
    namespaceOf: (index) => `${id}n${index}`,
    addressOf: (index) => `${subnet}.${10 + index}`,
    addNode(index) {
      const namespace = link.namespaceOf(index);
      ip('netns', 'add', namespace);
      nodes.add(index);
      ip('-n', namespace, 'link', 'set', 'lo', 'up');
      ip(
        'link',
        'add',
        `${id}n${index}a`,
        'netns',
        namespace,
        'type',
        'veth',
        'peer',
        'name',
        `${id}n${index}b`,
        'netns',
        switchNs,
      );
      ip('-n', namespace, 'addr', 'add', `${link.addressOf(index)}/24`, 'dev', `${id}n${index}a`);
      ip('-n', namespace, 'link', 'set', `${id}n${index}a`, 'up');
      ip('-n', switchNs, 'link', 'set', `${id}n${index}b`, 'master', 'br0');
      ip('-n', switchNs, 'link', 'set', `${id}n${index}b`, 'up');
    },
    close() {
      for (const index of nodes) {
        try {
          ip('netns', 'del', link.namespaceOf(index));
        } catch {
          // already gone
        }
      }
      try {
        ip('link', 'del', hostLink);
      } catch {
        // went with the switch's end
      }
      ip('netns', 'del', switchNs);
    },
  };
  return link;
}
