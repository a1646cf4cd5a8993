/**
 * `sandcell env build FILE | list | remove NAME`: custom environments (the
 * runtime plus the packages and files a description names), built for
 * bubblewrap (a root filesystem) or Docker (an image), chosen per session
 * with `--env NAME`.
 */
import path from 'node:path';
import { connectDocker } from '../backends/docker/index.js';
import { buildEnvironment, type EnvironmentBuildResult, removeImages } from '../environments/build.js';
import { buildDockerfileEnvironment, isDockerfile } from '../environments/build-dockerfile.js';
import { buildsLine, contentsLine } from '../environments/contents.js';
import { registerImageEnvironment } from '../environments/register-image.js';
import { defaultEnvironmentStore, listEnvironments, removeEnvironmentFromStore } from '../environments/store.js';
import type { EnvironmentBackendName } from '../environments/types.js';
import { describeImage } from './environment-image-line.js';
import { CliExit, EXIT_OK, EXIT_USAGE } from './exit-codes.js';
import { progressReporter } from './image-command.js';
import { allowedHosts } from './network-options.js';
import { dim } from './render.js';

export interface EnvBuildOptions {
  backend?: string;
  /** A Dockerfile's environment name (a description file names its own). */
  name?: string;
  force?: boolean;
  mirror?: string;
  /** `--allow-host`: more hosts the build may reach. */
  allowHost?: string[];
  /** `--wheel-cache DIR`: where the files the Python lock pins are kept. */
  wheelCache?: string;
  /** `--relock`: resolve the Python packages again. */
  relock?: boolean;
  json?: boolean;
}

function backendOf(value: string | undefined, file: string): EnvironmentBackendName {
  const backend = value ?? (isDockerfile(file) ? 'docker' : 'bubblewrap');
  if (backend !== 'bubblewrap' && backend !== 'docker') {
    throw new CliExit(EXIT_USAGE, `--backend must be bubblewrap or docker; got ${backend}.`);
  }
  return backend;
}

export async function envBuildCommand(file: string, options: EnvBuildOptions): Promise<number> {
  const backend = backendOf(options.backend, file);
  const dockerfile = isDockerfile(file);
  const allowHosts = allowedHosts('--allow-host', options.allowHost);
  if (dockerfile && backend !== 'docker') {
    throw new CliExit(EXIT_USAGE, `${file} is a Dockerfile: it builds for the docker backend only (--backend docker).`);
  }
  if (dockerfile && allowHosts) {
    throw new CliExit(
      EXIT_USAGE,
      `A Dockerfile's RUN steps have no network; --allow-host is for description files, whose builds go through the gate.`,
    );
  }
  if (dockerfile && !options.name) {
    throw new CliExit(EXIT_USAGE, `Name the environment a Dockerfile builds: --name NAME.`);
  }
  if (dockerfile && (options.wheelCache || options.relock)) {
    throw new CliExit(
      EXIT_USAGE,
      `--wheel-cache and --relock are for description files: a Dockerfile has no Python lock.`,
    );
  }
  if (!dockerfile && options.name) {
    throw new CliExit(EXIT_USAGE, `--name is for Dockerfiles; ${file}'s environment is named by its "name" field.`);
  }
  const progress = progressReporter(options.json === true, { title: 'building the environment', prefix: 'env' });
  const started = Date.now();
  let result: Awaited<ReturnType<typeof buildEnvironment>>;
  try {
    result = dockerfile
      ? await buildDockerfileEnvironment({
          file,
          name: options.name as string,
          docker: await connectDocker(),
          onProgress: progress.report,
        })
      : await buildEnvironment({
          file,
          backend,
          force: options.force,
          mirror: options.mirror,
          ...(allowHosts ? { allowHosts } : {}),
          ...(options.wheelCache ? { wheelCache: path.resolve(options.wheelCache) } : {}),
          ...(options.relock ? { relock: true } : {}),
          docker: backend === 'docker' ? await connectDocker() : undefined,
          onProgress: progress.report,
        });
  } finally {
    progress.stop();
  }
  return reportBuild(result, started, options.json === true);
}

/** `sandcell env add NAME --image repo:tag`: an existing image, checked and registered unmodified. */
export async function envAddCommand(name: string, options: { image?: string; json?: boolean }): Promise<number> {
  if (!options.image) throw new CliExit(EXIT_USAGE, 'Say which image: --image repo:tag (one the engine has).');
  const progress = progressReporter(options.json === true, { title: 'checking the image', prefix: 'env' });
  const started = Date.now();
  let result: EnvironmentBuildResult;
  try {
    result = await registerImageEnvironment({
      name,
      image: options.image,
      docker: await connectDocker(),
      onProgress: progress.report,
    });
  } finally {
    progress.stop();
  }
  return reportBuild(result, started, options.json === true);
}

function reportBuild(result: EnvironmentBuildResult, started: number, json: boolean): number {
  const backend = result.backend;
  if (json) {
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
  const lock = result.pythonLock;
  if (lock) {
    const pinned = `${lock.files} Python package file${lock.files === 1 ? '' : 's'} from the index`;
    process.stdout.write(
      dim(
        lock.written
          ? `Wrote ${lock.file}: ${pinned}, pinned by hash; keep it with the description.\n`
          : `Installed as ${lock.file} pins: ${pinned}.\n`,
      ),
    );
  }
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
    if (record.image) process.stdout.write(dim(`  ${describeImage(record.image)}\n`));
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
