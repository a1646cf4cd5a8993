/**
 * An SVG a sandbox wrote, turned into a PNG before it is shown. An SVG drawn
 * by <img> runs no script, but its blob: URL is of this page's origin: "open
 * image in new tab" would make it a document of this origin, where script in
 * it could act as the user. A PNG has no script to run, so only PNG bytes
 * ever get a URL the user can reach.
 */

/** The largest side drawn: enough for a chart, small enough for a phone's memory. */
const MAX_SIDE = 4096;
/** For an SVG that gives no size of its own. */
const FALLBACK_WIDTH = 800;
const FALLBACK_HEIGHT = 600;

export async function rasterizeSvg(svg: Blob): Promise<Blob> {
  const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  try {
    const image = new Image();
    image.src = url;
    await image.decode();
    let width = image.naturalWidth || FALLBACK_WIDTH;
    let height = image.naturalHeight || FALLBACK_HEIGHT;
    const scale = Math.min(1, MAX_SIDE / Math.max(width, height));
    width = Math.max(1, Math.round(width * scale));
    height = Math.max(1, Math.round(height * scale));
    const canvas = document.createElement('canvas');
    canvas.width = width;
    canvas.height = height;
    const context = canvas.getContext('2d');
    if (!context) throw new Error('no canvas');
    context.drawImage(image, 0, 0, width, height);
    return await new Promise<Blob>((resolve, reject) =>
      canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error('the SVG could not be drawn'))), 'image/png'),
    );
  } finally {
    URL.revokeObjectURL(url);
  }
}
