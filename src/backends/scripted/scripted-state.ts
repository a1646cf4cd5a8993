/**
 * A snapshot's archive in the scripted sandbox, as the real supervisor's
 * (src/kernel/sandcell_state.py) behaves on the wire: state-begin empties the
 * state directory (a load with `clean` also the files), the host reads a save's
 * bytes in chunks at increasing offsets, and writes a load's bytes in chunks
 * until `eof`, when they are unpacked. The bytes are JSON here (the files, and
 * the state files the kernels wrote), not a tar: only the host's logic is
 * tested on this backend.
 */
import { FRAME_MAX_BYTES, type ReplyMessageBodies, type StateRequest } from '../../session/kernel-messages.js';
import type { ScriptedFileStore } from './file-store.js';

const CHUNK_BYTES = FRAME_MAX_BYTES;
export const STATE_DIR = '/tmp/.sandcell-state';

/** A refusal with the protocol's error code (the supervisor answers it as a failed reply). */
export class StateRefusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface Archived {
  files: Record<string, string>;
  states: Record<string, string>;
}

export class ScriptedStateArchive {
  /** The state directory's files, path → bytes (kernels write and read them). */
  readonly stateFiles = new Map<string, Buffer>();
  private archive?: { mode: 'save' | 'load'; clean: boolean; offset: number; bytes?: Buffer; received: Buffer[] };

  constructor(private readonly files: ScriptedFileStore) {}

  begin(request: Extract<StateRequest, { type: 'state-begin' }>): ReplyMessageBodies['state-begin'] {
    if (request.mode !== 'save' && request.mode !== 'load') {
      throw new StateRefusal('invalid-request', 'state-begin: mode must be save or load');
    }
    this.stateFiles.clear();
    this.archive = { mode: request.mode, clean: request.clean === true, offset: 0, received: [] };
    return { directory: STATE_DIR };
  }

  end(): ReplyMessageBodies['state-end'] {
    this.archive = undefined;
    this.stateFiles.clear();
    return {};
  }

  /** The reply's fields, and the frame of raw bytes that follows its line. */
  read(offset: number): { body: ReplyMessageBodies['state-read']; frame: Buffer } {
    const archive = this.archive;
    if (archive?.mode !== 'save') throw new StateRefusal('invalid-request', 'state-read: no archive is being saved');
    if (offset !== archive.offset) {
      throw new StateRefusal('invalid-request', `state-read: offset ${offset}, but ${archive.offset} bytes were read`);
    }
    archive.bytes ??= Buffer.from(
      JSON.stringify({
        files: Object.fromEntries([...this.files.dump()].map(([name, data]) => [name, data.toString('base64')])),
        states: Object.fromEntries([...this.stateFiles].map(([name, data]) => [name, data.toString('base64')])),
      } satisfies Archived),
    );
    const chunk = archive.bytes.subarray(offset, offset + CHUNK_BYTES);
    archive.offset += chunk.length;
    return { body: { bytes: chunk.length, eof: archive.offset >= archive.bytes.length }, frame: chunk };
  }

  write(frame: Buffer, eof: boolean): ReplyMessageBodies['state-write'] {
    const archive = this.archive;
    if (archive?.mode !== 'load') throw new StateRefusal('invalid-request', 'state-write: no archive is being loaded');
    if (frame.length > FRAME_MAX_BYTES) {
      throw new StateRefusal('invalid-request', `state-write: a frame holds at most ${FRAME_MAX_BYTES} bytes`);
    }
    archive.received.push(frame);
    if (!eof) return {};
    this.archive = undefined;
    let archived: Archived;
    try {
      archived = JSON.parse(Buffer.concat(archive.received).toString('utf8')) as Archived;
    } catch {
      throw new StateRefusal('state-failed', 'the archive could not be unpacked (not JSON)');
    }
    if (archive.clean) this.files.clear();
    for (const [name, bytes] of Object.entries(archived.files ?? {}))
      this.files.write(name, Buffer.from(bytes, 'base64'));
    for (const [name, bytes] of Object.entries(archived.states ?? {}))
      this.stateFiles.set(name, Buffer.from(bytes, 'base64'));
    return {};
  }
}
