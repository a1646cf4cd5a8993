/**
 * The images a step's code saved as files (plt.savefig, PIL, …), shown
 * inline; click one to see it full size. Only what is small enough to fetch
 * on a phone, and a few per step: the rest stay links under "Files written".
 */
import type { CodeFile } from '../../../src/protocol/index';
import { download } from '../api';
import { baseName } from '../format';
import { AuthImage } from './AuthImage';

const RASTER = /\.(png|jpe?g|gif|webp)$/i;
const SVG = /\.svg$/i;
/** Larger files are left to download: an inline image is fetched whole. */
export const MAX_INLINE_IMAGE_BYTES = 8 * 1024 * 1024;
const MAX_INLINE_IMAGES = 6;

/** Figures (kind `figure`: the server's copies of what plt.show() displayed) are shown already, as results. */
export function inlineImages(files: CodeFile[]): CodeFile[] {
  return files
    .filter((file) => file.kind === 'file')
    .filter((file) => (RASTER.test(file.path) || SVG.test(file.path)) && file.size <= MAX_INLINE_IMAGE_BYTES)
    .slice(0, MAX_INLINE_IMAGES);
}

export function SavedImages({ files, onError }: { files: CodeFile[]; onError?: (message: string) => void }) {
  const images = inlineImages(files);
  if (images.length === 0) return null;
  return (
    <div class="saved-images">
      {images.map((file) => (
        <figure class="figure saved-image" key={file.url}>
          <AuthImage
            url={file.url}
            alt={file.path}
            svg={SVG.test(file.path)}
            zoomable
            onDownload={() =>
              download(file.url, baseName(file.path)).catch((error: Error) =>
                onError?.(`Download of ${file.path} failed: ${error.message}`),
              )
            }
          />
          <figcaption class="muted">{file.path}</figcaption>
        </figure>
      ))}
    </div>
  );
}
