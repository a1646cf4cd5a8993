/**
 * sandcell's typed errors as MCP tool errors, mapped in this one place. An MCP
 * user has tools, session names and the command that started the server, not
 * HTTP routes: each hint names what they can do where they are — `sandcell mcp`
 * on stdio (its flags and environment variables), or /mcp of `sandcell serve`
 * (whose operator sets the limits).
 */
import { SandcellError } from '../../errors.js';
import { type DoorWords, messageFor } from '../core/error-words.js';
import type { LimitName } from '../core/errors.js';

/** Where the MCP server runs: `sandcell mcp` on stdio, or /mcp of `sandcell serve`. */
export type McpDeployment = 'stdio' | 'http';

const REUSE_A_SESSION =
  'Each session name is its own sandbox, kept until this MCP connection closes: run in a session you already have ' +
  '(the `session` argument)';

const LIMIT_HINTS: Record<McpDeployment, Record<LimitName, string>> = {
  stdio: {
    'sessions-per-key': `${REUSE_A_SESSION}, or start \`sandcell mcp\` with SANDCELL_SESSIONS_PER_KEY set higher.`,
    'server-sessions': `${REUSE_A_SESSION}, or start \`sandcell mcp\` with a higher --max-sessions.`,
    'queued-executions':
      'Wait for the code already running to finish, or start `sandcell mcp` with SANDCELL_MAX_QUEUED_EXECUTIONS set higher.',
    'executions-per-minute':
      'Wait, or start `sandcell mcp` with SANDCELL_EXECUTIONS_PER_MINUTE set higher (0 for no limit).',
    'code-bytes': 'Write large data into /mnt/data with the write_file tool instead.',
    'snapshot-bytes':
      'Remove files from /mnt/data that need not be kept, or start `sandcell mcp` with SANDCELL_SNAPSHOT_BYTES_PER_KEY set higher.',
    'terminals-per-key': 'Close terminals this key no longer needs.',
  },
  http: {
    'sessions-per-key':
      `${REUSE_A_SESSION}, or close an MCP connection you no longer use (its sessions close with it); ` +
      "the server's operator can raise `sandcell serve --sessions-per-key`.",
    'server-sessions': "Try again later; the server's operator can raise `sandcell serve --max-sessions`.",
    'queued-executions':
      "Wait for the code already running to finish; the server's operator can raise `sandcell serve --max-queued-executions`.",
    'executions-per-minute': "Wait; the server's operator can raise `sandcell serve --executions-per-minute`.",
    'code-bytes': 'Write large data into /mnt/data with the write_file tool instead.',
    'snapshot-bytes':
      "Remove files from /mnt/data that need not be kept; the server's operator can raise `sandcell serve --snapshot-bytes-per-key`.",
    'terminals-per-key': 'Close terminals this key no longer needs.',
  },
};

/**
 * A tool user's words: a session is named in a tool's arguments, and the core's messages about it
 * name library calls. A missing language keeps its message: it names the packages that add it, for
 * whoever runs the server.
 */
const wordsFor = (deployment: McpDeployment): DoorWords => ({
  limitHints: LIMIT_HINTS[deployment],
  hints: {
    'environment-not-found': 'list_environments says which environments there are.',
    'session-lost': 'The next call with its name starts a new session.',
  },
  sessionClosed:
    'The session was closed (it sat idle, or its sandbox ended); the next call with its name starts a new one.',
  unknownContext: (context) =>
    `The session has no context ${JSON.stringify(context)}; leave it out to run Python, or name a language to use its default context.`,
  tooManyContexts: (maxContexts) =>
    `The session already holds ${maxContexts} contexts, the most it may: run in a language it already uses, or use another session name.`,
  tooManyCommands: (maxCommands) =>
    `${maxCommands} commands are already running in the session, the most it may run at once; wait for one to end.`,
});

const MCP_WORDS: Record<McpDeployment, DoorWords> = { stdio: wordsFor('stdio'), http: wordsFor('http') };

/** The text of the tool error for a typed failure; undefined for anything else (a bug, rethrown). */
export function toolErrorText(error: unknown, deployment: McpDeployment): string | undefined {
  return error instanceof SandcellError ? messageFor(error, MCP_WORDS[deployment]) : undefined;
}
