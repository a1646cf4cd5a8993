/**
 * The public surface is deliberate: each entry point in package.json's
 * `exports` (as built in dist/, so `npm run build` first) exports exactly the
 * names listed here; no declaration a root, agents, server or testing user
 * loads imports dockerode's types (`sandcell/docker` is the one entry that
 * names them); and every package a declaration imports brings its types with
 * sandcell's `dependencies`, so a TypeScript user of any entry needs nothing
 * more. Changing the surface means changing a list below, on purpose.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types: string; import: string }>;
  dependencies: Record<string, string>;
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
    'EnvironmentInUseError',
    'EnvironmentNotFoundError',
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
    'SnapshotInvalidError',
    'SnapshotNotFoundError',
    'SnapshotTooLargeError',
    'TimeoutError',
    'TooManyCommandsError',
    'TooManyContextsError',
    'TooManyTerminalsError',
    'UnknownContextError',
    'VolumeExistsError',
    'VolumeInUseError',
    'VolumeNotFoundError',
    'VolumeStore',
    'VolumesUnavailableError',
    'closeLocalVolumes',
    'createBackend',
    'createBubblewrapBackend',
    'createSession',
    'createVolume',
    'deleteVolume',
    'formatTraceback',
    'getDefaultBackend',
    'listVolumes',
    'openSnapshotStore',
    'resolveBackend',
    'resumeSession',
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
    'RUN_SHELL_COMMAND',
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
    'ScriptedChatModel',
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

/** The packages (not node: built-ins, not relative files) that declaration files import. */
function packagesImportedBy(files: Iterable<string>): Set<string> {
  const packages = new Set<string>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/(?:from\s+|import\()\s*['"]([^'"./][^'"]*)['"]/g)) {
      const specifier = match[1] ?? '';
      if (specifier.startsWith('node:')) continue;
      const parts = specifier.split('/');
      packages.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? ''));
    }
  }
  return packages;
}

/** Whether an installed package ships its own declarations. */
function shipsTypes(name: string): boolean {
  const directory = path.join(root, 'node_modules', name);
  const own = JSON.parse(readFileSync(path.join(directory, 'package.json'), 'utf8')) as Record<string, unknown>;
  return (
    typeof own.types === 'string' ||
    typeof own.typings === 'string' ||
    JSON.stringify(own.exports ?? {}).includes('"types"') ||
    existsSync(path.join(directory, 'index.d.ts'))
  );
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

  it('every package the declarations import brings its types through dependencies, not devDependencies', () => {
    const reached = new Set<string>();
    for (const [, target] of entries)
      for (const file of declarationsReachedFrom(path.join(root, target.types))) reached.add(file);
    const imported = [...packagesImportedBy(reached)].sort();
    // Canary: the walk sees the packages the entries are built on, dockerode among them.
    expect(imported).toEqual(expect.arrayContaining(['@modelcontextprotocol/sdk', 'dockerode', 'zod']));
    const untyped = imported.filter((name) => {
      const typesPackage = `@types/${name.replace(/^@/, '').replace('/', '__')}`;
      if (name in manifest.dependencies && shipsTypes(name)) return false;
      return !(typesPackage in manifest.dependencies);
    });
    expect(untyped).toEqual([]);
  });
});
