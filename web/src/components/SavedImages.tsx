/**
 * The images a step's code saved as files (plt.savefig, PIL, …), shown
 * inline; click one to see it full size. Only what is small enough to fetch
 * on a phone, and a few per step (savedImages, which the notebook export
 * follows too): the rest stay links under "Files written".
 */
import { type CodeFile, savedImages, savedImageType } from '../../../src/protocol/index';
import { download } from '../api';
import { baseName } from '../format';
import { AuthImage } from './AuthImage';

const isSvg = (path: string) => savedImageType(path)?.encoding === 'text';

export function SavedImages({ files, onError }: { files: CodeFile[]; onError?: (message: string) => void }) {
  const images = savedImages(files);
  if (images.length === 0) return null;
  return (
    <div class="saved-images">
      {images.map((file) => (
        <figure class="figure saved-image" key={file.url}>
          <AuthImage
            url={file.url}
            alt={file.path}
            svg={isSvg(file.path)}
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
