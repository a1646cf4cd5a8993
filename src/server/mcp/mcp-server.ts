/**
 * sandcell's MCP server (official SDK): the tools run_python, run_code,
 * run_command (code-tools.ts), list_files, read_file, write_file and
 * reset_session, list_environments (environment-tools.ts). Sessions are named
 * (default "default") and live as long as the MCP connection; the same name in
 * another connection is another sandbox. A session's environment is chosen by
 * the call that starts it.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { DEFAULT_ENVIRONMENT_NAME } from '../../environments/types.js';
import { isRasterImage } from '../../protocol/images.js';
import type { Owner } from '../core/auth.js';
import type { ManagedSession } from '../core/managed-session.js';
import type { SessionRegistry } from '../core/registry.js';
import { contentTypeFor } from '../http/content-type.js';
import { registerCodeTools } from './code-tools.js';
import { checkEnvironment, ENVIRONMENT_ARGUMENT, registerEnvironmentTools } from './environment-tools.js';
import { type McpDeployment, toolErrorText } from './tool-errors.js';

const SESSION_NAME = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a session name is 1 to 64 letters, digits, ".", "-" or "_"')
  .optional()
  .describe('Which of your sessions to use; each keeps its own variables and files. Default "default".');

export interface McpServerOptions {
  registry: SessionRegistry;
  owner: Owner;
  /** Session names are unique within this scope (one MCP connection). */
  scope: string;
  version: string;
  /** Where it runs: the hints of its tool errors name what its user can do there. */
  deployment: McpDeployment;
  /** The environment a session gets when the tool call names none (`serve --env`, `mcp --env`). @default 'default' */
  defaultEnvironment?: string;
}

const text = (value: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: value }],
  ...(isError ? { isError: true } : {}),
});

/** Typed failures become tool errors the model can read; anything else is rethrown. */
async function guard(deployment: McpDeployment, work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (error) {
    const message = toolErrorText(error, deployment);
    if (message !== undefined) return text(message, true);
    throw error;
  }
}

export function createMcpServer(options: McpServerOptions): McpServer {
  const { registry, owner, scope, deployment } = options;
  const server = new McpServer(
    { name: 'sandcell', version: options.version },
    {
      instructions:
        'Run Python (or JavaScript, TypeScript, bash, R with run_code) and shell commands (run_command) in a sandbox ' +
        'that keeps state between calls (variables, imports, files in /mnt/data). numpy, pandas and matplotlib are ' +
        'available; figures come back as images. There is no network.',
    },
  );
  const sessionFor = async (name: string | undefined, environment?: string): Promise<ManagedSession> => {
    const entry = await registry.names.open(owner, 'mcp', scope, name ?? 'default', environment);
    checkEnvironment(entry, name ?? 'default', environment);
    return entry;
  };

  registerCodeTools(server, {
    registry,
    sessionFor,
    guard: (work) => guard(deployment, work),
    sessionName: SESSION_NAME,
  });
  registerEnvironmentTools(server, {
    defaultEnvironment: options.defaultEnvironment ?? DEFAULT_ENVIRONMENT_NAME,
    guard: (work) => guard(deployment, work),
  });

  server.registerTool(
    'list_files',
    {
      title: 'List files',
      description: "List the files in the session's /mnt/data (or a directory in it), with sizes.",
      inputSchema: {
        path: z.string().optional().describe('A directory under /mnt/data. Default: /mnt/data itself.'),
        session: SESSION_NAME,
      },
    },
    ({ path, session }) =>
      guard(deployment, async () => {
        const entry = await sessionFor(session);
        const files = await entry.session.files.list(path ?? '', { recursive: true });
        if (files.length === 0) return text('/mnt/data is empty.');
        const lines = files.map((file) =>
          file.type === 'directory' ? `/mnt/data/${file.path}/` : `/mnt/data/${file.path}  (${file.size} bytes)`,
        );
        return text(lines.join('\n'));
      }),
  );

  server.registerTool(
    'read_file',
    {
      title: 'Read a file',
      description: 'Read a file from /mnt/data: text comes back as text, images as images.',
      inputSchema: {
        path: z.string().describe('Path under /mnt/data, e.g. "chart.png" or "/mnt/data/out/result.csv".'),
        session: SESSION_NAME,
      },
    },
    ({ path, session }) =>
      guard(deployment, async () => {
        const entry = await sessionFor(session);
        const data = await entry.session.files.read(path);
        const type = contentTypeFor(path).split(';')[0] as string;
        if (isRasterImage(type)) return { content: [{ type: 'image', data: data.toString('base64'), mimeType: type }] };
        const decoded = new TextDecoder('utf-8', { fatal: false }).decode(data);
        if (!decoded.includes('\uFFFD') && !decoded.includes('\u0000')) return text(decoded);
        return {
          content: [
            { type: 'text', text: `${path} is binary (${data.length} bytes); its bytes follow as a resource.` },
            {
              type: 'resource',
              resource: {
                uri: `file:///mnt/data/${path.replace(/^\/mnt\/data\//, '')}`,
                mimeType: type,
                blob: data.toString('base64'),
              },
            },
          ],
        };
      }),
  );

  server.registerTool(
    'write_file',
    {
      title: 'Write a file',
      description: 'Write a file into /mnt/data (creating directories, replacing an existing file).',
      inputSchema: {
        path: z.string().describe('Path under /mnt/data.'),
        content: z.string().describe('The file content.'),
        encoding: z.enum(['utf8', 'base64']).optional().describe('How `content` is encoded. Default utf8.'),
        session: SESSION_NAME,
        environment: ENVIRONMENT_ARGUMENT,
      },
    },
    ({ path, content, encoding, session, environment }) =>
      guard(deployment, async () => {
        const entry = await sessionFor(session, environment);
        const data = encoding === 'base64' ? Buffer.from(content, 'base64') : Buffer.from(content, 'utf8');
        const written = await entry.session.files.write(path, data);
        return text(`Wrote /mnt/data/${written.path} (${written.size} bytes).`);
      }),
  );

  server.registerTool(
    'reset_session',
    {
      title: 'Reset a session',
      description: "Clear the session's Python state (variables, imports); files in /mnt/data are kept.",
      inputSchema: { session: SESSION_NAME },
    },
    ({ session }) =>
      guard(deployment, async () => {
        const entry = await registry.names.find(owner, scope, session ?? 'default');
        if (!entry) return text(`Session "${session ?? 'default'}" has not run anything yet; nothing to reset.`);
        await entry.session.reset();
        return text(`Session "${session ?? 'default'}" was reset: variables and imports cleared, files kept.`);
      }),
  );

  return server;
}
