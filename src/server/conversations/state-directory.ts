/**
 * Where conversation histories live on disk, and reading them back.
 *
 * <state dir>/conversations/<owner digest>/<conversation id>.jsonl
 *
 * The owner digest is a SHA-256 of the owner's id (itself derived from the
 * key's digest, never the key), so a key's files sit apart from every other
 * key's and nothing on disk can be turned back into a key. Directories are
 * 0700 and files 0600: histories hold whatever the code printed.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chmod, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { InvalidInputError } from '../../errors.js';
import { FILE_MODE } from './conversation-journal.js';
import { type ReadHistory, readHistory, UnreadableHistoryError } from './history-records.js';

export { defaultStateDirectory, NO_STATE_DIRECTORY } from '../../internal/state-directory.js';

const DIRECTORY_MODE = 0o700;
const HISTORY_EXTENSION = '.jsonl';
const ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function ownerDigest(ownerId: string): string {
  return createHash('sha256').update(`sandcell-owner:${ownerId}`).digest('hex').slice(0, 32);
}

export function historyFile(stateDirectory: string, ownerId: string, conversationId: string): string {
  return path.join(stateDirectory, 'conversations', ownerDigest(ownerId), `${conversationId}${HISTORY_EXTENSION}`);
}

/**
 * Creates the directories (0700) and proves they can be written; a state
 * directory that cannot be written stops the server with what to do, rather
 * than losing every conversation at the next restart.
 */
export async function prepareStateDirectory(stateDirectory: string): Promise<void> {
  const conversations = path.join(stateDirectory, 'conversations');
  try {
    // Directories it creates are 0700; one the user gave (it may be shared) keeps its mode, but
    // `conversations` in it, which holds everything, is the server's own.
    await mkdir(conversations, { recursive: true, mode: DIRECTORY_MODE });
    await chmod(conversations, DIRECTORY_MODE);
    await access(conversations, constants.W_OK);
    const probe = path.join(conversations, `.probe-${process.pid}`);
    await writeFile(probe, '', { mode: 0o600 });
    await rm(probe, { force: true });
  } catch (error) {
    throw new InvalidInputError(
      `Cannot keep conversations in ${stateDirectory} (${(error as Error).message}). ` +
        'Choose a writable directory with --state-dir (or SANDCELL_STATE_DIR, or stateDir in the library).',
    );
  }
}

/** The directory a new conversation's file goes into. */
export async function ownerDirectory(stateDirectory: string, ownerId: string): Promise<void> {
  await mkdir(path.dirname(historyFile(stateDirectory, ownerId, '')), { recursive: true, mode: DIRECTORY_MODE });
}

export interface StoredHistory extends ReadHistory {
  file: string;
  bytes: number;
}

/**
 * Every readable history under the state directory. A file that cannot be
 * read, is too big, or sits in the wrong key's directory is skipped with a
 * log line: one damaged conversation never stops the server.
 */
export async function readStoredHistories(
  stateDirectory: string,
  maxFileBytes: number,
  logger: Logger,
): Promise<StoredHistory[]> {
  const root = path.join(stateDirectory, 'conversations');
  const histories: StoredHistory[] = [];
  for (const owner of await readdir(root, { withFileTypes: true })) {
    if (!owner.isDirectory()) continue;
    const directory = path.join(root, owner.name);
    for (const entry of await readdir(directory, { withFileTypes: true })) {
      const id = entry.name.slice(0, -HISTORY_EXTENSION.length);
      if (!entry.isFile() || !entry.name.endsWith(HISTORY_EXTENSION) || !ID_PATTERN.test(id)) continue;
      const history = await readStoredHistory(path.join(directory, entry.name), maxFileBytes, logger);
      if (history) histories.push(history);
    }
  }
  return histories;
}

/** One history file, checked against where it is (its id, its key's directory); undefined, logged, when it cannot be read. */
export async function readStoredHistory(
  file: string,
  maxFileBytes: number,
  logger: Logger,
): Promise<StoredHistory | undefined> {
  const id = path.basename(file, HISTORY_EXTENSION);
  const owner = path.basename(path.dirname(file));
  try {
    const { size } = await stat(file);
    if (size > maxFileBytes) throw new UnreadableHistoryError(`it is ${size} bytes, over ${maxFileBytes}`);
    const history = readHistory(await readFile(file, 'utf8'));
    if (history.header.id !== id || ownerDigest(history.header.ownerId) !== owner) {
      throw new UnreadableHistoryError('its header does not match where it is');
    }
    if (history.skipped > 0 || history.torn) {
      logger.warn({ file, skipped: history.skipped, torn: history.torn }, 'skipped damaged records of a history');
    }
    return { ...history, file, bytes: size };
  } catch (error) {
    logger.error({ file, reason: (error as Error).message }, 'skipped a conversation history that cannot be read');
    return undefined;
  }
}

/** Writes a history file (0600) into the key's directory, as a journal would have: a history taken up from elsewhere. */
export async function writeStoredHistory(
  stateDirectory: string,
  ownerId: string,
  conversationId: string,
  bytes: Uint8Array,
): Promise<string> {
  await ownerDirectory(stateDirectory, ownerId);
  const file = historyFile(stateDirectory, ownerId, conversationId);
  await writeFile(file, bytes, { mode: FILE_MODE });
  return file;
}

/** Whether `id` is a conversation's id (the form its history file is named by). */
export const isConversationId = (id: string): boolean => ID_PATTERN.test(id);
