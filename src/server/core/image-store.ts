/**
 * Images a session's executions produced, kept in memory so a client fetches
 * them by URL instead of receiving base64 in every response. Bounded: the
 * oldest images go first.
 */
import { randomUUID } from 'node:crypto';
import { bufferEncoding, imageType } from '../../protocol/images.js';

const MAX_IMAGES = 64;
const MAX_BYTES = 64 * 1024 * 1024;

export interface StoredImage {
  name: string;
  mimeType: string;
  data: Buffer;
}

export class ImageStore {
  private readonly images = new Map<string, StoredImage>();
  private bytes = 0;
  private readonly maxImages: number;
  private readonly maxBytes: number;

  constructor(limits: { maxImages?: number; maxBytes?: number } = {}) {
    this.maxImages = limits.maxImages ?? MAX_IMAGES;
    this.maxBytes = limits.maxBytes ?? MAX_BYTES;
  }

  /** Keeps an image (content as carried in a bundle: see protocol/images.ts) and returns its file name. */
  add(mimeType: string, content: string): StoredImage {
    const type = imageType(mimeType);
    const data = Buffer.from(content, type ? bufferEncoding(type) : 'base64');
    const name = `${randomUUID().replace(/-/g, '').slice(0, 20)}.${type?.extension ?? 'bin'}`;
    const image = { name, mimeType, data };
    this.images.set(name, image);
    this.bytes += data.length;
    for (const [oldest, stored] of this.images) {
      if (this.images.size <= this.maxImages && this.bytes <= this.maxBytes) break;
      if (oldest === name) break;
      this.images.delete(oldest);
      this.bytes -= stored.data.length;
    }
    return image;
  }

  /** Puts back an image read from disk under its own name (the history links to it). */
  restore(image: StoredImage): void {
    if (this.images.has(image.name)) return;
    this.images.set(image.name, image);
    this.bytes += image.data.length;
  }

  /** The images kept, oldest first. */
  values(): IterableIterator<StoredImage> {
    return this.images.values();
  }

  get(name: string): StoredImage | undefined {
    return this.images.get(name);
  }

  /** Forgets an image (its output was dropped). */
  delete(name: string): void {
    const image = this.images.get(name);
    if (!image) return;
    this.images.delete(name);
    this.bytes -= image.data.length;
  }

  /** The bytes of every image kept. */
  get totalBytes(): number {
    return this.bytes;
  }
}
