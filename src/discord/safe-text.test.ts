import { describe, expect, it } from 'vitest';
import { safeText } from './safe-text.js';

describe('safeText', () => {
  it('drops credentials and query strings from URLs but keeps host and path', () => {
    expect(safeText('503 from https://user:hunter2@api.example.com/v1/chat?key=abc123 (retried)')).toBe(
      '503 from https://api.example.com/v1/chat (retried)',
    );
  });

  it('removes API keys, bearer tokens and the secrets it is given', () => {
    const text = safeText('bad key sk-proj-abcdefghijkl; Authorization: Bearer xyz.123; token MTIzNDU2.abc', [
      'MTIzNDU2.abc',
    ]);
    expect(text).not.toMatch(/sk-proj|xyz\.123|MTIzNDU2/);
  });

  it('replaces host paths, not /mnt/data ones', () => {
    expect(safeText('cannot open /home/ops/.config/sandcell/config.json; see /mnt/data/sales.csv')).toBe(
      'cannot open [path]; see /mnt/data/sales.csv',
    );
  });
});
