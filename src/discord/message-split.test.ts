import { describe, expect, it } from 'vitest';
import { DISCORD_MESSAGE_LIMIT, fenced, splitMessage } from './message-split.js';

function fencesBalanced(piece: string): boolean {
  return (piece.match(/^\s*```/gm) ?? []).length % 2 === 0;
}

describe('splitMessage', () => {
  it('keeps a short message whole', () => {
    expect(splitMessage('hello')).toEqual(['hello']);
    expect(splitMessage('')).toEqual([]);
  });

  it('cuts at line breaks, every piece within the limit', () => {
    const text = Array.from({ length: 300 }, (_, index) => `line ${index} of the answer`).join('\n');
    const pieces = splitMessage(text);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(DISCORD_MESSAGE_LIMIT);
    expect(pieces.join('\n')).toBe(text);
  });

  it('closes a code block at a cut and reopens it with its language', () => {
    const code = Array.from({ length: 200 }, (_, index) => `x_${index} = ${index} * 2`).join('\n');
    const pieces = splitMessage(`Here is the code:\n${fenced(code, 'python')}\nDone.`, 500);
    expect(pieces.length).toBeGreaterThan(2);
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(500);
      expect(fencesBalanced(piece)).toBe(true);
    }
    expect(pieces[1]!.startsWith('```python\n')).toBe(true);
    expect(pieces.at(-1)!.endsWith('Done.')).toBe(true);
  });

  it('cuts a line longer than a message', () => {
    const pieces = splitMessage('a'.repeat(4500), 2000);
    expect(pieces.length).toBe(3);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(2000);
    expect(pieces.join('')).toBe('a'.repeat(4500));
  });

  it('cuts a long line of prose between words', () => {
    const pieces = splitMessage('word '.repeat(1000).trim(), 2000);
    expect(pieces.length).toBe(3);
    for (const piece of pieces) expect(piece).toMatch(/^word( word)*\s*$/);
  });
});

describe('fenced', () => {
  it('keeps backticks in the text from closing the block', () => {
    const block = fenced('print("```")', 'python');
    expect(block.startsWith('```python\n')).toBe(true);
    expect((block.match(/```/g) ?? []).length).toBe(2);
  });
});
