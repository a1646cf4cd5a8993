/** What volumes refuse: one not there, a name taken, one in use, volumes where they cannot be the same files. */
import { SandcellError } from '../errors.js';

/** No volume by that name or id for this owner (another key's is "not found" too). */
export class VolumeNotFoundError extends SandcellError {
  constructor(readonly volume: string) {
    super('volume-not-found', `No volume ${JSON.stringify(volume)}.`);
  }
}

/** The owner has a volume of that name already. */
export class VolumeExistsError extends SandcellError {
  constructor(readonly volume: string) {
    super('volume-exists', `A volume named ${JSON.stringify(volume)} exists already.`);
  }
}

/** A live session mounts the volume, so it is not deleted; `sessions` are their ids, the message names them. */
export class VolumeInUseError extends SandcellError {
  constructor(
    readonly volume: string,
    readonly sessions: string[],
    /** How each is named to the client (`sandbox ID`, `session ID`): `session ID` unless given. */
    names: string[] = sessions.map((id) => `session ${id}`),
  ) {
    super(
      'volume-in-use',
      `The volume ${JSON.stringify(volume)} is mounted by ${names.join(', ')}; ` +
        `end ${names.length === 1 ? 'it' : 'them'} first. Nothing was deleted.`,
    );
  }
}

/** Volumes cannot be mounted here; the message says why and what would make them work. */
export class VolumesUnavailableError extends SandcellError {
  constructor(message: string) {
    super('volumes-unavailable', message);
  }
}

/**
 * The owner's volumes are kept on another node of a cluster (their files are on its disk). With
 * `relayTo`, that node is serving and the request is answered there (http/relay.ts); without, it is
 * not (draining, restarting or gone), and the request waits for it: nothing is mounted empty.
 */
export class VolumesElsewhereError extends SandcellError {
  constructor(
    message: string,
    /** The node that holds them, when known. */
    readonly node?: string,
    readonly relayTo?: { node: string; url: string },
  ) {
    super('volumes-elsewhere', message);
  }
}
