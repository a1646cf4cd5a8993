/**
 * Which files a step's code wrote are shown as pictures: the web UI shows them
 * inline, the notebook export embeds them, so both show the same. Images a
 * person can fetch whole on a phone, a few per step; the rest stay links.
 * Figures (kind `figure`, the server's copies of what plt.show() displayed)
 * are shown already, as results.
 */
import { IMAGE_TYPES, type ImageType } from './images.js';
import type { CodeFile } from './transcript.js';

/** Larger image files are left to download: one shown is fetched whole. */
export const MAX_SAVED_IMAGE_BYTES = 8 * 1024 * 1024;
/** A step that saved more shows the first ones. */
export const MAX_SAVED_IMAGES_PER_STEP = 6;

/** The image type a file's name says it is (`chart.png`, `photo.jpeg`, `plot.svg`), if any. */
export function savedImageType(path: string): ImageType | undefined {
  const extension = /\.([A-Za-z]+)$/.exec(path)?.[1]?.toLowerCase();
  return IMAGE_TYPES.find((type) => type.extension === (extension === 'jpeg' ? 'jpg' : extension));
}

/** The images among a step's files that are shown, in the order written. */
export function savedImages(files: readonly CodeFile[]): CodeFile[] {
  return files
    .filter((file) => file.kind === 'file' && savedImageType(file.path) && file.size <= MAX_SAVED_IMAGE_BYTES)
    .slice(0, MAX_SAVED_IMAGES_PER_STEP);
}
