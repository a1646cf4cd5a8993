/**
 * Where a key's volumes are kept in a cluster. A volume is files on one node's disk (an image on a
 * loop device, or a directory), not shared storage, so every volume of a key lives on one node, its
 * home: the node that made the key's first volume, named in the store
 * (`volume-homes/<owner digest>.json`, written once with a conditional write, so nodes asked at once
 * agree; a home never changes). A volume's id carries its home's tag (`vol` + tag + random), so a
 * request that names only the volume (the content API with the volume's token) finds it too.
 *
 * What needs the files is answered at the home: the volume APIs, and sessions that mount a volume
 * (new ones, and resumes of paused ones). Another node relays such a request there (http/relay.ts).
 * A home not serving now (stopped, restarting, gone; or draining, for a session) makes the request a
 * 503 `volumes-elsewhere` naming it, with Retry-After: never an empty volume in its place.
 */
import type { ObjectStore } from '../../store/object-store.js';
import { VolumesElsewhereError } from '../../volumes/volume-errors.js';
import { ownerDigest } from '../conversations/state-directory.js';
import { type Cluster, NODE_NAME, type Peer } from './cluster.js';

/** What a request wants of the volumes: their files (the volume APIs), or a session that mounts them. */
export type VolumeUse = 'files' | 'sessions';

const MAX_HOME_RECORD_BYTES = 1024;

export class VolumeHomes {
  /** Owner digest → its home node, once read (a home never changes). */
  private readonly homes = new Map<string, string>();

  constructor(
    private readonly cluster: Cluster,
    private readonly objects: () => Promise<ObjectStore>,
  ) {}

  /**
   * The node holding the owner's volumes; undefined when the owner has none anywhere. With `claim`
   * (a new volume), this node becomes it when there is none yet.
   */
  async homeOf(ownerId: string, claim = false): Promise<string | undefined> {
    const digest = ownerDigest(ownerId);
    const known = this.homes.get(digest);
    if (known !== undefined) return known;
    const objects = await this.objects();
    const key = `volume-homes/${digest}.json`;
    let node = parseHome(await objects.read(key, MAX_HOME_RECORD_BYTES));
    if (node === undefined && claim) {
      const written = await objects.writeIfAbsent(key, Buffer.from(JSON.stringify({ node: this.cluster.node })));
      node = written ? this.cluster.node : parseHome(await objects.read(key, MAX_HOME_RECORD_BYTES));
    }
    if (node !== undefined) this.homes.set(digest, node);
    return node;
  }

  /** The home of the volume this id names, by its tag: undefined for this node's or an id without one. */
  async homeOfVolume(volumeId: string): Promise<string | undefined> {
    const tag = /^vol([0-9a-f]{8})[0-9a-f]{12}$/.exec(volumeId)?.[1];
    if (tag === undefined || tag === this.cluster.tag) return undefined;
    const peer = await this.cluster.peerOf(tag);
    if (peer) return peer.node;
    throw new VolumesElsewhereError(
      `The volume ${volumeId} is kept on a node that is not in the cluster now (stopped, restarting or gone): its files are on that node's disk, and are served again once it is back.`,
    );
  }

  /**
   * Why a request for volumes kept on `home` (another node) is not answered here: relayed to it when
   * it serves them (a draining node still serves their files, but starts no session), else a refusal
   * that says so. With no home (`undefined`: a draining node asked for a key's first volume), any
   * peer that is not draining makes it.
   */
  async elsewhere(home: string | undefined, use: VolumeUse): Promise<VolumesElsewhereError> {
    if (home === undefined) {
      const peer = this.cluster.livePeers().find((candidate) => !candidate.draining);
      return peer
        ? new VolumesElsewhereError(
            `This node is draining, and node ${peer.node}, which would make the volume, could not be asked; try again.`,
            peer.node,
            relay(peer),
          )
        : new VolumesElsewhereError(
            'This node is draining and no other node can make the volume now; try again shortly.',
          );
    }
    const peer = (await this.cluster.isAlive(home))
      ? this.cluster.livePeers().find((candidate) => candidate.node === home)
      : undefined;
    if (peer && !(peer.draining && use === 'sessions')) {
      return new VolumesElsewhereError(
        `The key's volumes are kept on node ${home}, and this request could not be answered there; try again.`,
        home,
        relay(peer),
      );
    }
    const state = peer
      ? 'which is draining: a session that mounts one starts (or resumes) there once it is back'
      : 'which is not in the cluster now (stopped, restarting or gone): its disk holds them, and they are served again once it is back';
    return new VolumesElsewhereError(
      `The key's volumes are kept on node ${home}, ${state}. Nothing was mounted.`,
      home,
    );
  }
}

const relay = (peer: Peer) => ({ node: peer.node, url: peer.url });

function parseHome(bytes: Uint8Array | undefined): string | undefined {
  if (bytes === undefined) return undefined;
  try {
    const { node } = JSON.parse(Buffer.from(bytes).toString('utf8')) as { node?: unknown };
    return typeof node === 'string' && NODE_NAME.test(node) ? node : undefined;
  } catch {
    return undefined;
  }
}
