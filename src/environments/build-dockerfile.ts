/**
 * `sandcell env build path/to/Dockerfile --name NAME`: `docker build` with the
 * Dockerfile's directory as the context, offline (the engine cannot pull, so
 * its FROM must be an image it has), with the build argument
 * `SANDCELL_RUNTIME` = `sandcell-runtime:<version>` so that
 * `ARG SANDCELL_RUNTIME` + `FROM ${SANDCELL_RUNTIME}` starts from sandcell's
 * runtime. The result is registered as an existing image is (register-image.ts).
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { ImageBuildError, InvalidInputError } from '../errors.js';
import { runtimeImageTag } from '../image/recipe.js';
import type { BuildProgress } from '../image/rootfs.js';
import type { EnvironmentBuildResult } from './build.js';
import { registerImageEnvironment } from './register-image.js';

/** The build argument a Dockerfile may start FROM. */
export const RUNTIME_BUILD_ARGUMENT = 'SANDCELL_RUNTIME';
/** Files in a build context: a Dockerfile in a home directory would otherwise send all of it. */
const MAX_CONTEXT_FILES = 10_000;
/** Lines of the build's output kept for an error message. */
const KEPT_LINES = 20;

export interface DockerfileBuildOptions {
  /** The Dockerfile; its directory is the build context. */
  file: string;
  name: string;
  docker: Dockerode;
  storeDirectory?: string;
  onProgress?: (progress: BuildProgress) => void;
}

/** A file named Dockerfile, NAME.Dockerfile or Dockerfile.NAME is a Dockerfile, not a sandcell.env.json. */
export function isDockerfile(file: string): boolean {
  return /(^|\.)Dockerfile(\.|$)/i.test(path.basename(file));
}

export async function buildDockerfileEnvironment(options: DockerfileBuildOptions): Promise<EnvironmentBuildResult> {
  const file = path.resolve(options.file);
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) throw new InvalidInputError(`${file} is not a file.`);
  const context = path.dirname(file);
  const files = await contextFiles(context);
  const runtime = runtimeImageTag();
  options.onProgress?.({ stage: 'docker build', detail: `${file} (${RUNTIME_BUILD_ARGUMENT}=${runtime})` });
  const stream = await options.docker.buildImage(
    { context, src: files },
    {
      dockerfile: path.relative(context, file),
      buildargs: { [RUNTIME_BUILD_ARGUMENT]: runtime },
      rm: true,
      forcerm: true,
      // RUN steps reach nothing: a build that fetches goes through a description file and its gate.
      networkmode: 'none',
    },
  );
  const lines: string[] = [];
  const imageId = await new Promise<string>((resolve, reject) => {
    let id: string | undefined;
    let failure: string | undefined;
    options.docker.modem.followProgress(
      stream,
      (error: Error | null) => {
        const message = error?.message ?? failure;
        if (message) reject(buildError(message, lines, runtime));
        else if (!id) reject(buildError('the engine named no image', lines, runtime));
        else resolve(id);
      },
      (event: { stream?: string; error?: string; aux?: { ID?: string } }) => {
        if (event.error) failure = event.error;
        if (event.aux?.ID) id = event.aux.ID;
        const line = event.stream?.trimEnd();
        if (line) {
          lines.push(line);
          if (lines.length > KEPT_LINES) lines.shift();
          options.onProgress?.({ stage: 'docker build', detail: line });
        }
      },
    );
  });
  try {
    return await registerImageEnvironment({
      name: options.name,
      image: imageId,
      docker: options.docker,
      origin: { kind: 'dockerfile', source: file },
      storeDirectory: options.storeDirectory,
      onProgress: options.onProgress,
    });
  } catch (error) {
    // Refused by the check: the image it built is nobody's (one still used or tagged elsewhere stays).
    await options.docker
      .getImage(imageId)
      .remove()
      .catch(() => undefined);
    throw error;
  }
}

/** The build context's files (relative), bounded: what `docker build DIR` would send. */
async function contextFiles(context: string): Promise<string[]> {
  const entries = await readdir(context, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((entry) => entry.isFile() || entry.isSymbolicLink())
    .map((entry) => path.relative(context, path.join(entry.parentPath ?? entry.path, entry.name)));
  if (files.length > MAX_CONTEXT_FILES) {
    throw new InvalidInputError(
      `${context} holds ${files.length} files; a Dockerfile's directory is its build context, at most ${MAX_CONTEXT_FILES}: put the Dockerfile in a directory of its own.`,
    );
  }
  return files;
}

function buildError(message: string, lines: string[], runtime: string): ImageBuildError {
  const offline = /pull access denied|not found|dial tcp|lookup .* on|no such host/i.test(message)
    ? `\nThe engine builds offline here: FROM must name an image it has (\`docker images\`), e.g. \`ARG ${RUNTIME_BUILD_ARGUMENT}\` then \`FROM \${${RUNTIME_BUILD_ARGUMENT}}\` for ${runtime} (\`sandcell image build\` makes it).`
    : '';
  return new ImageBuildError(`docker build failed: ${message.trim()}${offline}\n${lines.join('\n')}`.trimEnd());
}
