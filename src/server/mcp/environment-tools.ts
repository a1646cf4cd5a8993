/**
 * Environments over MCP: a session's environment (the packages and files it
 * has) is chosen when the session is first used, with `environment` on the
 * tools that can start one; list_environments says what there is. Asking an
 * existing session for another environment is an error, not a silent switch:
 * the session's variables and files would be lost.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { contentsLine } from '../../environments/contents.js';
import { listEnvironments } from '../../environments/store.js';
import { DEFAULT_ENVIRONMENT_NAME, ENVIRONMENT_NAME_PATTERN } from '../../environments/types.js';
import { InvalidInputError } from '../../errors.js';
import type { ManagedSession } from '../core/managed-session.js';

export const ENVIRONMENT_ARGUMENT = z
  .string()
  .regex(ENVIRONMENT_NAME_PATTERN, 'an environment name from list_environments')
  .optional()
  .describe("The session's environment (extra packages; see list_environments), chosen by the call that starts it.");

/** Refuses a session that runs another environment than the one asked for. */
export function checkEnvironment(entry: ManagedSession, sessionName: string, asked: string | undefined): void {
  const running = entry.session.environment.name;
  if (asked === undefined || asked === running) return;
  throw new InvalidInputError(
    `Session "${sessionName}" already runs in the environment ${running}, not ${asked}. Use another session name for ${asked} (e.g. session: "${asked}"), or leave out environment.`,
  );
}

export function registerEnvironmentTools(
  server: McpServer,
  options: { defaultEnvironment: string; guard(work: () => Promise<CallToolResult>): Promise<CallToolResult> },
): void {
  server.registerTool(
    'list_environments',
    {
      title: 'List environments',
      description:
        'List the environments a new session can start in (pass one as `environment`), with the packages and files each adds.',
      inputSchema: {},
    },
    () =>
      options.guard(async () => {
        const records = await listEnvironments();
        const lines = [
          `${DEFAULT_ENVIRONMENT_NAME}: the standard sandbox (numpy, pandas, matplotlib and more)${
            options.defaultEnvironment === DEFAULT_ENVIRONMENT_NAME ? ' — used when environment is left out' : ''
          }`,
          ...records.map((record) => {
            const contents = contentsLine(record.description) ?? 'adds nothing';
            const isDefault = record.name === options.defaultEnvironment ? ' — used when environment is left out' : '';
            return `${record.name}: the standard sandbox plus — ${contents}${isDefault}`;
          }),
        ];
        return { content: [{ type: 'text', text: lines.join('\n') }] };
      }),
  );
}
