/**
 * Shared by the E2B suites: a real server on 127.0.0.1 with two API keys in
 * E2B's format, and the SDK pointed at it the way a user does it — through
 * E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY in the environment, nothing else.
 */
import type { SandcellServer, ServerOptions } from '../../src/server/index.js';
import { type LogCapture, startTestServer } from './server.js';

export const KEY = 'e2b_0123456789abcdef0123456789abcdef';
export const OTHER_KEY = 'e2b_fedcba9876543210fedcba9876543210';

export type TestServer = SandcellServer & { logs: LogCapture };

/** Starts the server and points the SDK's environment variables at its /e2b. */
export async function startE2bServer(options: ServerOptions = {}): Promise<TestServer> {
  const server = await startTestServer({ apiKeys: [KEY, OTHER_KEY], ...options });
  process.env.E2B_API_URL = `${server.url}/e2b`;
  process.env.E2B_SANDBOX_URL = `${server.url}/e2b`;
  process.env.E2B_API_KEY = KEY;
  delete process.env.E2B_DEBUG;
  delete process.env.E2B_DOMAIN;
  return server;
}

/** Runs `action` with E2B_API_KEY set to another key, as a second tenant would. */
export async function asKey<T>(key: string, action: () => Promise<T>): Promise<T> {
  const previous = process.env.E2B_API_KEY;
  process.env.E2B_API_KEY = key;
  try {
    return await action();
  } finally {
    process.env.E2B_API_KEY = previous;
  }
}
