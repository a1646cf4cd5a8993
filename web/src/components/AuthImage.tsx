/**
 * An image from the API, fetched with the key and shown through a blob: URL
 * (revoked when it goes). SVG is drawn into a PNG first (see rasterize-svg).
 * A zoomable one is a button that opens it full size in the page's own viewer
 * (never a new tab: the blob: URL stays inside this page).
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, fetchBlob } from '../api';
import { rasterizeSvg } from '../render/rasterize-svg';
import { ImageViewer } from './ImageViewer';

export interface AuthImageProps {
  url: string;
  alt: string;
  className?: string;
  /** The image is SVG markup: shown only as pixels. */
  svg?: boolean;
  /** Click (or Enter) opens it full size. */
  zoomable?: boolean;
  /** Offered by the full-size viewer. */
  onDownload?: () => void;
}

export function AuthImage({ url, alt, className, svg = false, zoomable = false, onDownload }: AuthImageProps) {
  const [source, setSource] = useState<string>();
  const [failed, setFailed] = useState<string>();
  const [viewing, setViewing] = useState(false);

  useEffect(() => {
    let objectUrl: string | undefined;
    let live = true;
    setSource(undefined);
    setFailed(undefined);
    fetchBlob(url)
      .then(async ({ blob }) => {
        const shown = svg ? await rasterizeSvg(blob) : blob;
        if (!live) return;
        objectUrl = URL.createObjectURL(shown);
        setSource(objectUrl);
      })
      .catch((error: unknown) => {
        if (!live) return;
        setFailed(
          error instanceof ApiError && error.status === 404
            ? 'The image is gone (its session ended).'
            : 'The image could not be loaded.',
        );
      });
    return () => {
      live = false;
      if (objectUrl) URL.revokeObjectURL(objectUrl);
    };
  }, [url, svg]);

  if (failed) {
    return (
      <p class="image-missing" role="note">
        {alt}: {failed}
      </p>
    );
  }
  if (!source) return <div class="image-loading" role="img" aria-label={`${alt} (loading)`} aria-busy="true" />;
  const image = <img class={className ?? 'output-image'} src={source} alt={alt} />;
  if (!zoomable) return image;
  return (
    <>
      <button
        type="button"
        class="image-button"
        aria-label={`Open ${alt} full size`}
        title="Open full size"
        onClick={() => setViewing(true)}
      >
        {image}
      </button>
      {viewing ? (
        <ImageViewer source={source} alt={alt} onClose={() => setViewing(false)} onDownload={onDownload} />
      ) : null}
    </>
  );
}
