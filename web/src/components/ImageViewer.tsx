/** An image full size, over the page: Escape, the close button or a click outside the image closes it. */
import { useEffect, useRef } from 'preact/hooks';
import { CloseIcon, DownloadIcon } from './Icons';

export interface ImageViewerProps {
  /** A blob: URL the caller owns. */
  source: string;
  alt: string;
  onClose: () => void;
  onDownload?: () => void;
}

export function ImageViewer({ source, alt, onClose, onDownload }: ImageViewerProps) {
  const closeButton = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    const opener = document.activeElement as HTMLElement | null;
    closeButton.current?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape') {
        event.stopPropagation();
        onClose();
      }
    };
    window.addEventListener('keydown', onKey, true);
    return () => {
      window.removeEventListener('keydown', onKey, true);
      opener?.focus(); // back where the user was
    };
  }, [onClose]);

  return (
    // biome-ignore lint/a11y/useKeyWithClickEvents: the keyboard closes it with Escape (above) or the close button; a click outside the image is the pointer's way
    <div
      class="image-viewer"
      role="dialog"
      aria-modal="true"
      aria-label={alt}
      onClick={(event) => {
        const target = event.target as HTMLElement;
        if (!target.closest('.image-viewer-image, .image-viewer-bar')) onClose();
      }}
    >
      <div class="image-viewer-bar">
        <span class="image-viewer-title">{alt}</span>
        {onDownload ? (
          <button
            type="button"
            class="icon-button"
            aria-label={`Download ${alt}`}
            title="Download"
            onClick={onDownload}
          >
            <DownloadIcon />
          </button>
        ) : null}
        <button ref={closeButton} type="button" class="icon-button" aria-label="Close" title="Close" onClick={onClose}>
          <CloseIcon />
        </button>
      </div>
      <div class="image-viewer-body">
        <img class="image-viewer-image" src={source} alt={alt} />
      </div>
    </div>
  );
}
