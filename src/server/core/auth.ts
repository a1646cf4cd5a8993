/**
 * API keys. Each key is a tenant (an "owner"): sessions belong to the owner that
 * created them and are invisible to every other. Keys are kept only as SHA-256
 * digests, looked up by the digest of the presented token.
 */

import { createHash } from 'node:crypto';
import type { Isolation } from '../../environments/types.js';
import { InvalidInputError } from '../../errors.js';
import { HttpError } from '../http/errors.js';

export interface Owner {
  /** Stable internal id (derived from the key's digest); never the key itself. */
  id: string;
  /** For logs and metrics: the key's name, or a short digest. */
  label: string;
  /** The wall every session of the key runs behind, where the operator asked for one (`serve --gvisor-key`). */
  isolation?: Isolation;
}

/** The one owner of a server that runs without keys (loopback only). */
export const LOCAL_OWNER: Owner = Object.freeze({ id: 'local', label: 'local' });

const digest = (secret: string): string => createHash('sha256').update(secret).digest('hex');

export class ApiKeys {
  private readonly owners = new Map<string, Owner>();

  /** `gvisorKeys`: the names of the keys whose sessions run on gVisor (each must name a key). */
  constructor(keys: string[], gvisorKeys: string[] = []) {
    const labels = new Set<string>();
    for (const key of keys) {
      const separator = key.indexOf(':');
      const secret = separator >= 0 ? key.slice(separator + 1) : key;
      const hash = digest(secret);
      const label = separator > 0 ? key.slice(0, separator) : `key-${hash.slice(0, 8)}`;
      if (labels.has(label) || this.owners.has(hash)) {
        throw new InvalidInputError(
          `Two API keys share the name or value ${JSON.stringify(label)}; give each key its own.`,
        );
      }
      labels.add(label);
      const isolation: Isolation | undefined = gvisorKeys.includes(label) ? 'gvisor' : undefined;
      this.owners.set(hash, { id: `key-${hash.slice(0, 32)}`, label, ...(isolation ? { isolation } : {}) });
    }
    const unknown = gvisorKeys.filter((name) => !labels.has(name));
    if (unknown.length > 0) {
      throw new InvalidInputError(
        `--gvisor-key (SANDCELL_GVISOR_KEYS) names ${unknown.map((name) => JSON.stringify(name)).join(', ')}, which no API key is called: give the key a name (name:key) and name it here.`,
      );
    }
  }

  get enabled(): boolean {
    return this.owners.size > 0;
  }

  /** The owner of this id, if a key of this server still makes it (a signed link's, say). */
  ownerById(id: string): Owner | undefined {
    if (!this.enabled) return id === LOCAL_OWNER.id ? LOCAL_OWNER : undefined;
    for (const owner of this.owners.values()) if (owner.id === id) return owner;
    return undefined;
  }

  /**
   * The owner of a request from its `Authorization` header (or `api-key` header).
   * Without configured keys every request is the local owner, whatever it sends.
   */
  authenticate(authorization: string | undefined, apiKeyHeader?: string): Owner {
    if (!this.enabled) return LOCAL_OWNER;
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? apiKeyHeader?.trim();
    if (!token) {
      throw new HttpError(401, 'unauthorized', 'This server needs an API key: send `Authorization: Bearer <key>`.', {
        'www-authenticate': 'Bearer',
      });
    }
    const owner = this.owners.get(digest(token));
    if (!owner) {
      throw new HttpError(401, 'unauthorized', 'The API key is not valid for this server.', {
        'www-authenticate': 'Bearer error="invalid_token"',
      });
    }
    return owner;
  }
}
