/** An image from the API, fetched with the key and shown through a blob: URL (revoked when it goes). */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, fetchBlob } from '../api';

export function AuthImage({ url, alt, className }: { url: string; alt: string; className?: string }) {
  const [source, setSource] = useState<string>();
  const [failed, setFailed] = useState<string>();

  useEffect(() => {
    let objectUrl: string | undefined;
    let live = true;
    setSource(undefined);
    setFailed(undefined);
    fetchBlob(url)
      .then(({ blob }) => {
        if (!live) return;
        objectUrl = URL.createObjectURL(blob);
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
  }, [url]);

  if (failed) {
    return (
      <p class="image-missing" role="note">
        {alt}: {failed}
      </p>
    );
  }
  if (!source) return <div class="image-loading" role="img" aria-label={`${alt} (loading)`} aria-busy="true" />;
  return <img class={className ?? 'output-image'} src={source} alt={alt} />;
}
