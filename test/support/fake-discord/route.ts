/** The shape of a REST route in the fake, and template matching (`/channels/:channelId/messages`). */
import type { DiscordState } from './discord-state.js';
import type { DiscordRequestBody } from './request-body.js';

export interface RouteContext {
  state: DiscordState;
  params: Record<string, string>;
  query: URLSearchParams;
  body(): Promise<DiscordRequestBody>;
}

export interface RouteAnswer {
  status: number;
  body?: unknown;
}

export interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  template: string;
  /** Interaction callbacks and webhook routes take their token in the path, not a bot token. */
  auth: boolean;
  handle(context: RouteContext): Promise<RouteAnswer> | RouteAnswer;
}

export function matchTemplate(template: string, path: string): Record<string, string> | undefined {
  const templateParts = template.split('/');
  const pathParts = path.split('/');
  if (templateParts.length !== pathParts.length) return undefined;
  const params: Record<string, string> = {};
  for (const [index, part] of templateParts.entries()) {
    const actual = pathParts[index]!;
    if (part.startsWith(':')) params[part.slice(1)] = decodeURIComponent(actual);
    else if (part !== actual) return undefined;
  }
  return params;
}

export const noContent: RouteAnswer = { status: 204 };
export const ok = (body: unknown): RouteAnswer => ({ status: 200, body });
