/**
 * How a conversation is named, and its export's file name. A person's words
 * name it: the first question, else the files uploaded. Code is no title
 * ("import pandas as pd df =…" tells the sidebar nothing), so a notebook cell
 * offers only its leading comment or the /mnt/data file it names, and even
 * that stays provisional until a question or an upload names the conversation.
 */

export const UNTITLED = 'New conversation';
const MAX_TITLE_CHARS = 80;
/** Export names are for a downloads folder: a few words, no punctuation to escape. */
const MAX_FILE_NAME_CHARS = 40;

/** One line of at most 80 characters. */
export function titleFrom(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > MAX_TITLE_CHARS ? `${line.slice(0, MAX_TITLE_CHARS - 1)}…` : line;
}

/** The title the uploaded files give: their names. */
export function titleFromFiles(names: string[]): string {
  return titleFrom(names.map((name) => name.split('/').pop() ?? name).join(', '));
}

/**
 * What a cell tells about itself in words: its first line when that is a
 * comment (`# Accidents by weather`), else the name of the first file under
 * /mnt/data it names; undefined when it says nothing a person wrote.
 */
export function titleFromCell(code: string): string | undefined {
  const firstLine = code.split('\n').find((line) => line.trim() !== '') ?? '';
  const comment = /^\s*(?:#(?!!)|\/\/)\s*(.*\S)/.exec(firstLine)?.[1];
  if (comment && /\p{L}/u.test(comment)) return titleFrom(comment);
  const file = /\/mnt\/data\/([\w.-]*[A-Za-z][\w.-]*\.[A-Za-z0-9]{1,8})\b/.exec(code)?.[1];
  return file ? titleFrom(file) : undefined;
}

/**
 * A short, clean file name for an export: the title's words, lower case,
 * joined by hyphens, cut at a word to at most 40 characters.
 * "What drives the number of accidents?" → `what-drives-the-number-of-accidents`.
 */
export function exportFileName(title: string, extension: string): string {
  const words = title
    .normalize('NFKC')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
  let base = '';
  for (const word of words) {
    const next = base ? `${base}-${word}` : word;
    if (next.length > MAX_FILE_NAME_CHARS) {
      if (!base) base = word.slice(0, MAX_FILE_NAME_CHARS);
      break;
    }
    base = next;
  }
  return `${base || 'conversation'}.${extension}`;
}
