/**
 * Discord refuses a message over 2000 characters. A long answer is cut into
 * messages at line breaks; a cut inside a fenced code block closes the fence
 * and opens it again (same language) in the next message, so each message
 * renders on its own.
 */

/** Discord's limit on a message's content. */
export const DISCORD_MESSAGE_LIMIT = 2000;

const FENCE = /^\s*```(\S*)/;

/** Cuts `text` into pieces of at most `limit` characters, keeping code fences balanced in each. */
export function splitMessage(text: string, limit = DISCORD_MESSAGE_LIMIT): string[] {
  if (limit < 40) throw new RangeError('splitMessage needs a limit of at least 40 characters.');
  if (text.length <= limit) return text.length > 0 ? [text] : [];
  const pieces: string[] = [];
  let current = '';
  // The fence open at the end of `current` (its language), or undefined outside code.
  let openFence: string | undefined;
  const closing = () => (openFence === undefined ? '' : '\n```');
  const flush = () => {
    if (current.trim() === '' || current.trim() === `\`\`\`${openFence ?? ''}`) {
      current = openFence === undefined ? '' : `\`\`\`${openFence}\n`;
      return;
    }
    pieces.push(current.replace(/\n+$/, '') + closing());
    current = openFence === undefined ? '' : `\`\`\`${openFence}\n`;
  };
  for (const line of text.split('\n')) {
    const fence = line.match(FENCE);
    const nextFence = fence ? (openFence === undefined ? (fence[1] ?? '') : undefined) : openFence;
    // Room for the line, its newline, and a closing fence if code stays open after it.
    const reserve = nextFence === undefined ? 0 : 4;
    if (current.length + line.length + 1 + reserve > limit) flush();
    let rest = line;
    // A single line longer than a message is cut by characters.
    while (current.length + rest.length + 1 + reserve > limit) {
      const room = limit - current.length - reserve - 5;
      // Prose is cut between words when a space is near the end; code or a long token by characters.
      const space = rest.lastIndexOf(' ', room);
      const cut = nextFence === undefined && space > room / 2 ? space + 1 : room;
      current += rest.slice(0, cut);
      rest = rest.slice(cut);
      flush();
    }
    current += `${rest}\n`;
    openFence = nextFence;
  }
  flush();
  return pieces;
}

/** Wraps text in a fence that its own backticks cannot close. */
export function fenced(text: string, language = ''): string {
  const safe = text.replace(/```/g, '`\u200b``');
  return `\`\`\`${language}\n${safe.replace(/\n+$/, '')}\n\`\`\``;
}
