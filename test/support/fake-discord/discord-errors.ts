/**
 * Discord's error bodies ({ code, message, errors? }) and the rate-limit headers every REST answer
 * carries. discord.js reads both: the JSON code becomes DiscordAPIError.code, and the headers feed
 * its per-bucket limiter (here always far from the limit, so it never waits).
 */
import { createHash } from 'node:crypto';

export class DiscordApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly errors?: Record<string, unknown>,
  ) {
    super(message);
  }

  body(): Record<string, unknown> {
    return { message: this.message, code: this.code, ...(this.errors ? { errors: this.errors } : {}) };
  }
}

export const unknownChannel = () => new DiscordApiError(404, 10003, 'Unknown Channel');
export const unknownMessage = () => new DiscordApiError(404, 10008, 'Unknown Message');
export const unknownInteraction = () => new DiscordApiError(404, 10062, 'Unknown interaction');
export const unknownWebhook = () => new DiscordApiError(404, 10015, 'Unknown Webhook');
export const unauthorized = () => new DiscordApiError(401, 0, '401: Unauthorized');
export const missingPermissions = () => new DiscordApiError(403, 50013, 'Missing Permissions');

/** Discord's "Invalid Form Body" (50035) naming the offending field, as its validator does. */
export function invalidFormBody(field: string, errorCode: string, message: string): DiscordApiError {
  return new DiscordApiError(400, 50035, 'Invalid Form Body', {
    [field]: { _errors: [{ code: errorCode, message }] },
  });
}

const RATE_LIMIT = 50;

export function rateLimitHeaders(method: string, routeTemplate: string): Record<string, string> {
  const bucket = createHash('sha1').update(`${method} ${routeTemplate}`).digest('hex').slice(0, 32);
  return {
    'X-RateLimit-Limit': String(RATE_LIMIT),
    'X-RateLimit-Remaining': String(RATE_LIMIT - 1),
    'X-RateLimit-Reset': (Date.now() / 1000 + 1).toFixed(3),
    'X-RateLimit-Reset-After': '1.000',
    'X-RateLimit-Bucket': bucket,
  };
}
