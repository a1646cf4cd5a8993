import { describe, expect, it } from 'vitest';
import { bufferEncoding, findImage, IMAGE_TYPES, imageType, isRasterImage } from './images.js';

describe('image types', () => {
  it('carries binary images as base64 and SVG as text', () => {
    expect(IMAGE_TYPES.map((type) => [type.mimeType, type.encoding])).toEqual([
      ['image/png', 'base64'],
      ['image/jpeg', 'base64'],
      ['image/gif', 'base64'],
      ['image/webp', 'base64'],
      ['image/svg+xml', 'text'],
    ]);
    const svg = imageType('image/svg+xml');
    expect(svg && bufferEncoding(svg)).toBe('utf8');
    expect(isRasterImage('image/png')).toBe(true);
    expect(isRasterImage('image/svg+xml')).toBe(false);
    expect(imageType('text/html')).toBeUndefined();
  });

  it('finds the preferred image in a bundle, ignoring content that is not text', () => {
    expect(findImage({ 'text/plain': '<Figure>', 'image/svg+xml': '<svg/>', 'image/png': 'iVBOR' })).toMatchObject({
      type: { mimeType: 'image/png', extension: 'png' },
      content: 'iVBOR',
    });
    expect(findImage({ 'image/png': { not: 'text' }, 'image/svg+xml': '<svg/>' })?.type.extension).toBe('svg');
    expect(findImage({ 'text/plain': '2' })).toBeUndefined();
  });
});
