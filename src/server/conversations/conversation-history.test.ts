/**
 * A history read back from disk is taken back whole: its turns, the count of turns dropped before,
 * and the images its turns link (an image the file still holds but no turn links is left out); its
 * bytes count those images, and dropping goes on counting from where it was. Through the server
 * and its state directory: durable.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { Turn } from '../../protocol/index.js';
import { ImageStore } from '../core/image-store.js';
import { ConversationHistory } from './conversation-history.js';
import { jsonBytes } from './output-budget.js';

const IMAGES = '/v1/conversations/conversation-1/images';

function turnWithImage(id: string, image: string): Turn {
  return {
    id,
    kind: 'cell',
    createdAt: '2025-01-02T03:04:05.000Z',
    status: 'done',
    input: 'plt.show()',
    steps: [
      {
        type: 'code',
        callId: id,
        code: 'plt.show()',
        attempt: 1,
        maxAttempts: 1,
        status: 'ok',
        stdout: '',
        stderr: '',
        results: [
          {
            type: 'display_data',
            data: {},
            metadata: {},
            images: [{ mimeType: 'image/png', url: `${IMAGES}/${image}` }],
          },
        ],
        files: [],
      },
    ],
  };
}

const png = (bytes: number) => ({ mimeType: 'image/png', data: Buffer.alloc(bytes, 1) });

describe('ConversationHistory.restore', () => {
  it('takes back the turns, the dropped count and the linked images only; dropping goes on from there', () => {
    const images = new ImageStore();
    const rewrites: number[] = [];
    const history = new ConversationHistory(images, 1024 * 1024, () => rewrites.push(history.turns.length));
    const turns = [turnWithImage('turn-1', 'first.png'), turnWithImage('turn-2', 'second.png')];
    history.restore({
      turns,
      droppedTurns: 3,
      images: new Map([
        ['first.png', png(1000)],
        ['second.png', png(2000)],
        ['unlinked.png', png(4000)],
      ]),
    });

    expect(history.turns).toEqual(turns);
    expect(history.droppedTurns).toBe(3);
    expect(images.get('first.png')?.data.length).toBe(1000);
    expect(images.get('second.png')?.data.length).toBe(2000);
    expect(images.get('unlinked.png')).toBeUndefined();
    expect(history.bytes).toBe(3000 + jsonBytes(turns[0]) + jsonBytes(turns[1]));
    expect(rewrites).toEqual([]); // nothing changed in what was read

    // The oldest turn goes, with its image; the count goes on from the one read back.
    history.dropTurns(history.bytes - 1, () => undefined);
    expect(history.turns.map((turn) => turn.id)).toEqual(['turn-2']);
    expect(history.droppedTurns).toBe(4);
    expect(images.get('first.png')).toBeUndefined();
    expect(rewrites).toEqual([1]);
  });
});
