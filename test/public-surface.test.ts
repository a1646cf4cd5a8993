/**
 * The public surface is deliberate: each entry point in package.json's
 * `exports` (as built in dist/, so `npm run build` first) exports exactly the
 * names listed here, and no declaration a root, agents, server or testing
 * user loads imports dockerode's types (only a devDependency provides them;
 * `sandcell/docker` is the one entry that names them). Changing the surface
 * means changing a list below, on purpose.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types: string; import: string }>;
};

const EXPECTED: Record<string, string[]> = {
  '.': [
    'AbortError',
    'AutoBackend',
    'BACKEND_NAMES',
    'BackendUnavailableError',
    'BubblewrapBackend',
    'DEFAULT_CONTEXT_RESTART_TIMEOUT_MS',
    'DEFAULT_FILE_TRANSFER_BYTES',
    'DEFAULT_INTERRUPT_GRACE_MS',
    'DEFAULT_LIMITS',
    'DEFAULT_MAX_CODE_BYTES',
    'DEFAULT_MAX_COMMANDS',
    'DEFAULT_MAX_CONTEXTS',
    'DEFAULT_OUTPUT_BYTES',
    'DEFAULT_TIMEOUT_MS',
    'FileOperationError',
    'ImageBuildError',
    'InvalidInputError',
    'InvalidPathError',
    'KernelRequestError',
    'LANGUAGES',
    'LanguageUnavailableError',
    'PoolExhaustedError',
    'ProtocolError',
    'ResourceExhaustedError',
    'SandboxCrashedError',
    'SandboxStartError',
    'SandcellError',
    'Session',
    'SessionClosedError',
    'SessionPool',
    'TimeoutError',
    'TooManyCommandsError',
    'TooManyContextsError',
    'UnknownContextError',
    'createBackend',
    'createBubblewrapBackend',
    'createSession',
    'formatTraceback',
    'getDefaultBackend',
    'resolveBackend',
  ],
  './agents': [
    'Agent',
    'AnthropicChatModel',
    'ChatMessages',
    'DEFAULT_FILE_ACCESS_INSTRUCTIONS',
    'DEFAULT_HISTORY_CHARS',
    'DEFAULT_MAX_ATTEMPTS',
    'DEFAULT_MAX_FILE_BYTES',
    'DEFAULT_MAX_STEPS',
    'DEFAULT_MODELS',
    'DEFAULT_MODEL_MAX_RETRIES',
    'DEFAULT_MODEL_TIMEOUT_MS',
    'DEFAULT_PYTHON_INSTRUCTIONS',
    'DEFAULT_TOOL_OUTPUT_CHARS',
    'DataChat',
    'EXECUTE_PYTHON_CODE',
    'FileAccessAgent',
    'MAX_FILES_PER_DIRECTORY',
    'ModelConfigurationError',
    'ModelResponseError',
    'ModelUnavailableError',
    'OpenAIChatModel',
    'PROVIDERS',
    'PythonExecAgent',
    'REASONING_EFFORTS',
    'SAFE_FILE_ACCESS',
    'ToolManager',
    'boundText',
    'configPaths',
    'createChatModel',
    'defineTool',
    'loadConfig',
    'modelIsConfigured',
    'previewData',
    'toToolDefinition',
  ],
  './docker': ['DockerBackend', 'createDockerBackend'],
  './server': [
    'DEFAULT_EXECUTIONS_PER_MINUTE',
    'DEFAULT_HOST',
    'DEFAULT_IDLE_TIMEOUT_MS',
    'DEFAULT_MAX_EXECUTION_MS',
    'DEFAULT_PORT',
    'DEFAULT_SERVER_MAX_SESSIONS',
    'DEFAULT_SESSIONS_PER_KEY',
    'createMcpServer',
    'createServer',
    'resolveServerOptions',
    'runMcpStdio',
  ],
  './testing': [
    'ScriptedBackend',
    'ScriptedFileError',
    'ScriptedFileStore',
    'ScriptedSandbox',
    'ScriptedVolume',
    'createScriptedBackend',
  ],
};

const entries = Object.entries(manifest.exports).filter(
  (entry): entry is [string, { types: string; import: string }] => typeof entry[1] === 'object',
);

/** Every declaration file `file` loads, itself included, following relative imports. */
function declarationsReachedFrom(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  for (const match of text.matchAll(/(?:from\s+|import\()\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = path.resolve(path.dirname(file), (match[1] ?? '').replace(/\.js$/, '.d.ts'));
    if (existsSync(target)) declarationsReachedFrom(target, seen);
  }
  return seen;
}

describe('public surface', () => {
  it('package.json exports exactly the entry points listed here', () => {
    expect(entries.map(([name]) => name).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  for (const [name, target] of entries) {
    it(`${name} exports exactly its listed names`, async () => {
      const module = (await import(pathToFileURL(path.join(root, target.import)).href)) as Record<string, unknown>;
      expect(Object.keys(module).sort()).toEqual(EXPECTED[name]);
      expect(existsSync(path.join(root, target.types))).toBe(true);
    });
  }

  it('no declaration of the root, agents, server or testing entries imports dockerode', () => {
    const dockerodeImport = /(?:from\s+|import\()\s*['"]dockerode['"]/;
    // Canary: the walk reaches the Docker backend's declarations from sandcell/docker, where dockerode is named.
    const dockerEntry = entries.find(([name]) => name === './docker')?.[1];
    const fromDocker = [...declarationsReachedFrom(path.join(root, dockerEntry?.types ?? 'missing'))];
    expect(fromDocker.some((file) => dockerodeImport.test(readFileSync(file, 'utf8')))).toBe(true);

    for (const [name, target] of entries.filter(([entry]) => entry !== './docker')) {
      const reached = [...declarationsReachedFrom(path.join(root, target.types))];
      expect(reached.length, name).toBeGreaterThan(1);
      const naming = reached.filter((file) => dockerodeImport.test(readFileSync(file, 'utf8')));
      expect(
        naming.map((file) => path.relative(root, file)),
        name,
      ).toEqual([]);
    }
    expect(readFileSync(path.join(root, 'dist/index.d.ts'), 'utf8')).not.toContain('dockerode');
  });
});
