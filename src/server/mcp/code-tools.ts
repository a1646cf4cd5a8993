/**
 * The MCP tools that run things: run_python (as it always was), run_code (a
 * language's default context: python, javascript, typescript, bash or r) and
 * run_command (a shell command beside the kernels). A failure of the code or a
 * non-zero exit is a tool error the model reads; typed refusals go through
 * tool-errors.ts.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { formatBytes } from '../../protocol/format-bytes.js';
import { findImage } from '../../protocol/images.js';
import type { CommandResult } from '../../session/command.js';
import { formatTraceback } from '../../session/execution.js';
import { LANGUAGES, type Language } from '../../session/languages.js';
import { MAX_PATH_BYTES } from '../../session/sandbox-inputs.js';
import type { ManagedSession } from '../core/managed-session.js';
import type { ServerExecution, SessionRegistry } from '../core/registry.js';
import { ENVIRONMENT_ARGUMENT } from './environment-tools.js';

export interface CodeToolsOptions {
  registry: SessionRegistry;
  /** The named session, started in `environment` if new; an error if it runs another environment. */
  sessionFor(name: string | undefined, environment?: string): Promise<ManagedSession>;
  /** Wraps a tool's work: typed failures become tool errors. */
  guard(work: () => Promise<CallToolResult>): Promise<CallToolResult>;
  sessionName: z.ZodType<string | undefined>;
}

const TIMEOUT_SECONDS = z.number().positive().max(3600).optional().describe('Time limit for this run.');

/** An execution as tool content: its output and values as text, raster images as images. */
function executionContent(execution: ServerExecution): CallToolResult {
  const parts: string[] = [];
  if (execution.stdout) parts.push(execution.stdout.trimEnd());
  if (execution.stderr) parts.push(`[stderr]\n${execution.stderr.trimEnd()}`);
  const images: CallToolResult['content'] = [];
  for (const result of execution.results) {
    // MCP image content is base64: a raster image goes as one, SVG as its text/plain.
    const image = findImage(result.data);
    if (image && image.type.encoding === 'base64') {
      images.push({ type: 'image', data: image.content, mimeType: image.type.mimeType });
    } else if (typeof result.data['text/plain'] === 'string') {
      parts.push(result.data['text/plain'] as string);
    }
  }
  if (execution.error) parts.push(formatTraceback(execution.error));
  if (execution.stateLostReason) parts.push(`[note] ${execution.stateLostReason}`);
  if (execution.outputTruncated) parts.push('[note] output was cut at the per-execution limit');
  // sys.exit(), exit() or quit() (bash's exit) ends the code, never the session.
  if (execution.exitStatus !== undefined) {
    const kept = execution.language === 'python' ? ' with its variables' : '';
    parts.push(
      `[note] the code exited with status ${execution.exitStatus} and stopped there; the session goes on${kept}.`,
    );
  }
  // Published files: a link that needs no key (until it expires), or why there is none.
  for (const file of execution.files ?? []) {
    parts.push(
      file.url
        ? `[file] ${file.path} (${formatBytes(file.size)}): ${file.url} (the link expires ${file.expiresAt})`
        : `[file] ${file.path} (${formatBytes(file.size)}): ${file.error}`,
    );
  }
  return {
    content: [{ type: 'text', text: parts.join('\n\n') || '(no output)' }, ...images],
    ...(execution.status === 'ok' ? {} : { isError: true }),
  };
}

/** A command's result as tool content: the exit code first, then what it printed. */
function commandContent(result: CommandResult): CallToolResult {
  const status = result.timedOut
    ? `exit code ${result.exitCode} (killed at its time limit)`
    : `exit code ${result.exitCode}${result.signal ? ` (ended by ${result.signal})` : ''}`;
  const parts = [status];
  if (result.stdout) parts.push(`[stdout]\n${result.stdout.trimEnd()}`);
  if (result.stderr) parts.push(`[stderr]\n${result.stderr.trimEnd()}`);
  if (result.outputTruncated) parts.push('[note] output was cut at the per-stream limit');
  return {
    content: [{ type: 'text', text: parts.join('\n\n') }],
    ...(result.exitCode === 0 ? {} : { isError: true }),
  };
}

export function registerCodeTools(server: McpServer, options: CodeToolsOptions): void {
  const { registry, sessionFor, guard, sessionName } = options;
  const runIn = (
    language: Language,
    code: string,
    { session, environment, timeout_seconds }: { session?: string; environment?: string; timeout_seconds?: number },
  ) =>
    guard(async () => {
      const entry = await sessionFor(session, environment);
      const execution = await registry.execute(entry, code, {
        language,
        timeoutMs: timeout_seconds ? timeout_seconds * 1000 : undefined,
      });
      return executionContent(execution);
    });

  server.registerTool(
    'run_python',
    {
      title: 'Run Python',
      description:
        'Run Python code in a persistent sandboxed session and return its stdout, stderr, the value of the last ' +
        'expression, and any figures as images. Variables and files persist between calls; save files to /mnt/data.',
      inputSchema: {
        code: z.string().describe('Python source to run.'),
        session: sessionName,
        environment: ENVIRONMENT_ARGUMENT,
        timeout_seconds: TIMEOUT_SECONDS,
      },
    },
    ({ code, ...options }) => runIn('python', code, options),
  );

  server.registerTool(
    'run_code',
    {
      title: 'Run code',
      description:
        'Run code in a persistent sandboxed session, in one of several languages: python (default), javascript, ' +
        'typescript (Node.js; top-level await; the last expression is the value), bash (a persistent shell) or r. ' +
        'Each language keeps its own variables between calls; all share the files in /mnt/data.',
      inputSchema: {
        code: z.string().describe('Source to run.'),
        language: z.enum(LANGUAGES).optional().describe('The language of `code`. Default python.'),
        session: sessionName,
        environment: ENVIRONMENT_ARGUMENT,
        timeout_seconds: TIMEOUT_SECONDS,
      },
    },
    ({ code, language, ...options }) => runIn(language ?? 'python', code, options),
  );

  server.registerTool(
    'run_command',
    {
      title: 'Run a shell command',
      description:
        'Run a shell command (bash -c) in the session’s sandbox, beside its code, in /mnt/data unless `cwd` says ' +
        'otherwise; answers its exit code, stdout and stderr. There is no network.',
      inputSchema: {
        command: z.string().min(1).describe('The command line, e.g. "ls -la" or "wc -l data.csv".'),
        cwd: z
          .string()
          .min(1)
          .max(MAX_PATH_BYTES)
          .optional()
          .describe('Working directory, absolute or relative to /mnt/data.'),
        timeout_seconds: TIMEOUT_SECONDS,
        session: sessionName,
        environment: ENVIRONMENT_ARGUMENT,
      },
    },
    ({ command, cwd, timeout_seconds, session, environment }) =>
      guard(async () => {
        const entry = await sessionFor(session, environment);
        const result = await registry.commands.run(entry, command, {
          ...(cwd === undefined ? {} : { cwd }),
          ...(timeout_seconds ? { timeoutMs: timeout_seconds * 1000 } : {}),
        });
        return commandContent(result);
      }),
  );
}
