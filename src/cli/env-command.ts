/**
 * `sandcell env build FILE | list | remove NAME`: custom environments (the
 * runtime plus the packages and files a description names), built for
 * bubblewrap (a root filesystem) or Docker (an image), chosen per session
 * with `--env NAME`.
 */
import { connectDocker } from '../backends/docker/index.js';
import { buildEnvironment, removeImages } from '../environments/build.js';
import { buildsLine, contentsLine } from '../environments/contents.js';
import { defaultEnvironmentStore, listEnvironments, removeEnvironmentFromStore } from '../environments/store.js';
import type { EnvironmentBackendName } from '../environments/types.js';
import { CliExit, EXIT_OK, EXIT_USAGE } from './exit-codes.js';
import { progressReporter } from './image-command.js';
import { allowedHosts } from './network-options.js';
import { dim } from './render.js';

export interface EnvBuildOptions {
  backend?: string;
  force?: boolean;
  mirror?: string;
  /** `--allow-host`: more hosts the build may reach. */
  allowHost?: string[];
  json?: boolean;
}

function backendOf(value: string | undefined): EnvironmentBackendName {
  const backend = value ?? 'bubblewrap';
  if (backend !== 'bubblewrap' && backend !== 'docker') {
    throw new CliExit(EXIT_USAGE, `--backend must be bubblewrap or docker; got ${backend}.`);
  }
  return backend;
}

export async function envBuildCommand(file: string, options: EnvBuildOptions): Promise<number> {
  const backend = backendOf(options.backend);
  const allowHosts = allowedHosts('--allow-host', options.allowHost);
  const progress = progressReporter(options.json === true, { title: 'building the environment', prefix: 'env' });
  const started = Date.now();
  let result: Awaited<ReturnType<typeof buildEnvironment>>;
  try {
    result = await buildEnvironment({
      file,
      backend,
      force: options.force,
      mirror: options.mirror,
      ...(allowHosts ? { allowHosts } : {}),
      docker: backend === 'docker' ? await connectDocker() : undefined,
      onProgress: progress.report,
    });
  } finally {
    progress.stop();
  }
  if (options.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return EXIT_OK;
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  process.stdout.write(
    `${result.reused ? 'Up to date' : `Built in ${seconds} s`}: environment ${result.name} (${result.hash}) for ${backend} — ${result.backendRef}\n` +
      dim(
        `Use it with: sandcell run --env ${result.name} …  (or environmentName: '${result.name}' in createSession)\n`,
      ),
  );
  return EXIT_OK;
}

export async function envListCommand(options: { json?: boolean }): Promise<number> {
  const records = await listEnvironments();
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ store: defaultEnvironmentStore(), environments: records })}\n`);
    return EXIT_OK;
  }
  if (records.length === 0) {
    process.stdout.write(
      `No environments built (${defaultEnvironmentStore()}). Build one with: sandcell env build sandcell.env.json\n`,
    );
    return EXIT_OK;
  }
  for (const record of records) {
    process.stdout.write(`${record.name}  ${record.hash}  ${buildsLine(record.builds)}\n`);
    const contents = contentsLine(record.description);
    if (contents) process.stdout.write(dim(`  ${contents}\n`));
  }
  return EXIT_OK;
}

export async function envRemoveCommand(name: string, options: { json?: boolean }): Promise<number> {
  const records = await removeEnvironmentFromStore(defaultEnvironmentStore(), name);
  const hashes = records.filter((record) => record.builds.docker).map((record) => record.hash);
  const images = hashes.length > 0 ? await removeImages(await connectDocker(), name, hashes) : [];
  if (options.json) process.stdout.write(`${JSON.stringify({ name, builds: records.map((r) => r.hash), images })}\n`);
  else
    process.stdout.write(`Removed environment ${name} (${records.length} builds, ${images.length} Docker images).\n`);
  return EXIT_OK;
}
