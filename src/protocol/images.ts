/**
 * Which MIME types in a result's bundle are images, and how each is carried:
 * the one list every consumer reads (agents saving figures, the server's image
 * store and links, notebooks, MCP, the CLI). Jupyter's convention: binary
 * images travel as base64 text, SVG as its own markup.
 *
 * The kernel offers PNG, JPEG and SVG (MIME_TYPES in sandcell_python_runner.py);
 * GIF and WebP are here for files and for bundles other tools produce.
 */

export interface ImageType {
  mimeType: string;
  /** The file extension a saved image gets. */
  extension: string;
  /** How a person names the format. */
  label: string;
  /**
   * How the image is carried in a bundle: `base64` for binary (raster)
   * formats, `text` for SVG. Text images are markup that may carry script:
   * they are never shown inline from this origin nor passed on as raster images.
   */
  encoding: 'base64' | 'text';
}

/** In order of preference: when a bundle holds several, the first is the one shown or saved. */
export const IMAGE_TYPES: readonly ImageType[] = [
  { mimeType: 'image/png', extension: 'png', label: 'PNG', encoding: 'base64' },
  { mimeType: 'image/jpeg', extension: 'jpg', label: 'JPEG', encoding: 'base64' },
  { mimeType: 'image/gif', extension: 'gif', label: 'GIF', encoding: 'base64' },
  { mimeType: 'image/webp', extension: 'webp', label: 'WebP', encoding: 'base64' },
  { mimeType: 'image/svg+xml', extension: 'svg', label: 'SVG', encoding: 'text' },
];

/** The image type of `mimeType`, or undefined when it is not an image this list knows. */
export function imageType(mimeType: string): ImageType | undefined {
  return IMAGE_TYPES.find((type) => type.mimeType === mimeType);
}

/** A binary image, carried as base64 (MCP image content, inline display). */
export function isRasterImage(mimeType: string): boolean {
  return imageType(mimeType)?.encoding === 'base64';
}

/** The preferred image in a bundle, with its content as carried there; undefined when it holds none. */
export function findImage(bundle: Record<string, unknown>): { type: ImageType; content: string } | undefined {
  for (const type of IMAGE_TYPES) {
    const content = bundle[type.mimeType];
    if (typeof content === 'string') return { type, content };
  }
  return undefined;
}

/** The encoding Node's Buffer.from(content, …) reads an image's content with. */
export function bufferEncoding(type: ImageType): 'base64' | 'utf8' {
  return type.encoding === 'text' ? 'utf8' : 'base64';
}
