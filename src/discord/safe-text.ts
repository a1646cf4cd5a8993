/**
 * What the bot says about a failure is read by everyone in the channel: the
 * text loses credentials in URLs, query strings, API-key-like tokens, the
 * bot's own token and host paths before it is posted.
 */

const URL_PATTERN = /\bhttps?:\/\/[^\s"'<>)]+/gi;
// Absolute paths of two or more segments; /mnt/data is the sandbox's, not the host's.
const HOST_PATH_PATTERN = /(^|[\s"'(=:])(\/(?!mnt\/data\b)[\w.@~-]+(?:\/[\w.@~-]+)+\/?)/g;
const TOKEN_PATTERNS = [
  /\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}/g,
  /\bBearer\s+[A-Za-z0-9._~+/=-]+/gi,
  /\b(api[-_]?key|token|secret|password)\s*[=:]\s*[^\s,;]+/gi,
];

function safeUrl(text: string): string {
  try {
    const url = new URL(text);
    return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    return '[link]';
  }
}

/** `text` with URLs stripped to host and path, tokens and host paths replaced; `secrets` are removed wherever they appear. */
export function safeText(text: string, secrets: readonly string[] = []): string {
  let result = text;
  for (const secret of secrets) if (secret.length >= 4) result = result.split(secret).join('[redacted]');
  const urls: string[] = [];
  result = result.replace(URL_PATTERN, (match) => {
    urls.push(safeUrl(match));
    return `\uE000${urls.length - 1}\uE000`;
  });
  for (const pattern of TOKEN_PATTERNS) result = result.replace(pattern, '[redacted]');
  result = result.replace(HOST_PATH_PATTERN, (_match, before: string) => `${before}[path]`);
  return result.replace(/\uE000(\d+)\uE000/g, (_match, index: string) => urls[Number(index)] ?? '[link]');
}
