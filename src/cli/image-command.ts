/**
 * `sandcell image build`: builds the runtime (Python, IPython, the data
 * packages, the kernel) as a Docker image or as a root filesystem for
 * bubblewrap, with progress. `sandcell image status` says what is built;
 * `sandcell image prune` removes the builds of other versions.
 */
import { engineErrorText } from '../backends/docker/engine-errors.js';
import { connectDocker } from '../backends/docker/index.js';
import { buildRuntimeImage, type ImageRoute, runtimeImagePresent } from '../image/docker-image.js';
import { type PrunedBuild, pruneRootfsBuilds, pruneRuntimeImages } from '../image/prune.js';
import { runtimeImageTag, runtimeRootfsDirectory, runtimeVersion } from '../image/recipe.js';
import { type BuildProgress, buildRuntimeRootfs, rootfsIsBuilt } from '../image/rootfs.js';
import { buildServerImage, SERVER_IMAGE_REPOSITORY } from '../image/server-image.js';
import { formatBytes } from '../protocol/format-bytes.js';
import { CliExit, EXIT_OK, EXIT_SANDBOX_FAILURE, EXIT_USAGE } from './exit-codes.js';
import { dim } from './render.js';
import { startStatus } from './status.js';

export interface ImageBuildOptions {
  backend?: string;
  route?: string;
  force?: boolean;
  mirror?: string;
  json?: boolean;
  /** sandcell itself as a Docker image, not the runtime. */
  server?: boolean;
}

const ROUTES = ['auto', 'dockerfile', 'debootstrap'];

export async function imageBuildCommand(options: ImageBuildOptions): Promise<number> {
  const backend = options.backend ?? 'docker';
  if (backend !== 'docker' && backend !== 'bubblewrap') {
    throw new CliExit(EXIT_USAGE, `--backend must be docker or bubblewrap; got ${backend}.`);
  }
  const route = options.route ?? 'auto';
  if (!ROUTES.includes(route))
    throw new CliExit(EXIT_USAGE, `--route must be one of ${ROUTES.join(', ')}; got ${route}.`);
  if (backend === 'bubblewrap' && route === 'dockerfile') {
    throw new CliExit(
      EXIT_USAGE,
      'The bubblewrap runtime is a root filesystem; it is built with debootstrap (--route debootstrap).',
    );
  }
  if (options.server && (backend !== 'docker' || route === 'dockerfile')) {
    throw new CliExit(
      EXIT_USAGE,
      "--server builds a Docker image on the runtime's image; it takes no --backend bubblewrap or --route dockerfile.",
    );
  }
  const progress = progressReporter(options.json === true);
  const started = Date.now();
  const seconds = () => ((Date.now() - started) / 1000).toFixed(0);
  const build = { force: options.force, mirror: options.mirror, onProgress: progress.report };
  let result: Record<string, unknown>;
  let summary: string;
  try {
    if (options.server) {
      const image = await buildServerImage({ ...build, docker: await connectDocker() });
      result = { ...image };
      summary =
        `${image.reused ? 'Up to date' : `Built in ${seconds()} s`}: ${image.tag} (also tagged ${SERVER_IMAGE_REPOSITORY}:latest), on ${image.runtimeTag}\n` +
        dim('Run it as docs/kubernetes.md says: the container needs a few privileges for bubblewrap.\n');
    } else if (backend === 'bubblewrap') {
      const rootfs = await buildRuntimeRootfs(build);
      result = { ...rootfs };
      summary =
        `${rootfs.reused ? 'Up to date' : `Built in ${seconds()} s`}: runtime root filesystem ${rootfs.version} at ${rootfs.directory}\n` +
        dim('Use it with: sandcell run --rootfs runtime …  (or SANDCELL_ROOTFS=runtime)\n');
    } else {
      const image = await buildRuntimeImage({
        ...build,
        docker: await connectDocker(),
        route: route as ImageRoute | 'auto',
      });
      result = { ...image };
      summary = image.reused
        ? `Up to date: ${image.tag} is present in Docker Engine.\n`
        : `Built ${image.tag} in ${seconds()} s by the ${image.route} route.\n`;
    }
  } finally {
    progress.stop();
  }
  process.stdout.write(options.json ? `${JSON.stringify({ backend, ...result })}\n` : summary);
  return EXIT_OK;
}

/** On a terminal a spinner with the current step; otherwise one line per stage (CI logs stay readable). */
export function progressReporter(
  quiet: boolean,
  what = { title: 'building the runtime', prefix: 'image' },
): { report: (progress: BuildProgress) => void; stop: () => void } {
  if (quiet) return { report: () => undefined, stop: () => undefined };
  if (process.stderr.isTTY) {
    const status = startStatus(process.stderr, what.title);
    let routeShown = false;
    return {
      report: (progress) => {
        // A setup command's own output scrolls above the spinner, as it would in a terminal.
        if (progress.output !== undefined) process.stderr.write(`\r\x1b[2K  ${progress.output}\n`);
        // The route once, and every line of an environment build's network gate: what the build reached stays on screen.
        const keep = progress.stage.startsWith('network gate') || (progress.stage.startsWith('route: ') && !routeShown);
        if (keep) {
          routeShown ||= progress.stage.startsWith('route: ');
          process.stderr.write(`\r\x1b[2K${progress.stage}${progress.detail ? ` — ${progress.detail}` : ''}\n`);
        }
        status.update(`${progress.stage}${progress.detail ? dim(` ${progress.detail}`, process.stderr) : ''}`);
      },
      stop: () => status.stop(),
    };
  }
  let lastStage = '';
  return {
    report: (progress) => {
      if (progress.output !== undefined) {
        process.stderr.write(`${what.prefix}:   ${progress.output}\n`);
        return;
      }
      const stage = progress.stage.replace(/ \(\d+\)$/, '');
      if (stage === lastStage) return;
      lastStage = stage;
      process.stderr.write(`${what.prefix}: ${progress.stage}${progress.detail ? ` — ${progress.detail}` : ''}\n`);
    },
    stop: () => undefined,
  };
}

export async function imageStatusCommand(options: { json?: boolean }): Promise<number> {
  const docker = await connectDocker();
  let unreachable: string | undefined;
  const dockerImage = await runtimeImagePresent(docker).catch((error: unknown) => {
    unreachable = engineErrorText(error);
    return undefined;
  });
  const rootfs = await rootfsIsBuilt();
  const status = {
    version: runtimeVersion(),
    docker: {
      tag: runtimeImageTag(),
      present: dockerImage ?? null,
      ...(unreachable === undefined ? {} : { engineUnreachable: unreachable }),
    },
    bubblewrap: { directory: runtimeRootfsDirectory(), present: rootfs },
  };
  if (options.json) {
    process.stdout.write(`${JSON.stringify(status)}\n`);
    return EXIT_OK;
  }
  process.stdout.write(`runtime version ${status.version}\n`);
  process.stdout.write(
    `  docker:     ${status.docker.tag} ${unreachable !== undefined ? `unknown: the Docker Engine is unreachable (${unreachable}); start dockerd or set DOCKER_HOST` : dockerImage ? 'present' : dim('not built — sandcell image build')}\n`,
  );
  process.stdout.write(
    `  bubblewrap: ${status.bubblewrap.directory} ${rootfs ? 'present' : dim('not built — sandcell image build --backend bubblewrap')}\n`,
  );
  return EXIT_OK;
}

export async function imagePruneCommand(options: {
  backend?: string;
  dryRun?: boolean;
  json?: boolean;
}): Promise<number> {
  const backends = options.backend === undefined ? ['bubblewrap', 'docker'] : [options.backend];
  const verb = options.dryRun ? 'would remove' : 'removed';
  // Each line as it happens: removing a root filesystem takes seconds.
  const prune = {
    dryRun: options.dryRun,
    onPruned: (build: PrunedBuild) => {
      if (options.json) return;
      const size = build.bytes === undefined ? '' : ` (${formatBytes(build.bytes)})`;
      process.stdout.write(
        build.removed
          ? `${verb} ${build.backend} ${build.name}${size}\n`
          : `kept ${build.backend} ${build.name}: ${build.kept}\n`,
      );
    },
  };
  const pruned: PrunedBuild[] = [];
  let unreachable: string | undefined;
  if (backends.includes('bubblewrap')) pruned.push(...(await pruneRootfsBuilds(prune)));
  if (backends.includes('docker')) {
    try {
      pruned.push(...(await pruneRuntimeImages(await connectDocker(), prune)));
    } catch (error) {
      unreachable = engineErrorText(error);
      // Asked for Docker alone, an unreachable engine is the answer; otherwise it is said beside the rest.
      if (options.backend === 'docker') {
        throw new CliExit(
          EXIT_SANDBOX_FAILURE,
          `The Docker Engine is unreachable (${unreachable}); start dockerd or set DOCKER_HOST.`,
        );
      }
    }
  }
  if (options.json) {
    const engine = unreachable === undefined ? {} : { dockerUnreachable: unreachable };
    process.stdout.write(
      `${JSON.stringify({ version: runtimeVersion(), dryRun: options.dryRun === true, pruned, ...engine })}\n`,
    );
    return EXIT_OK;
  }
  if (unreachable !== undefined) {
    process.stdout.write(dim(`docker: not looked at: the Docker Engine is unreachable (${unreachable})\n`));
  }
  const freed = pruned.filter((build) => build.removed).reduce((sum, build) => sum + (build.bytes ?? 0), 0);
  process.stdout.write(
    pruned.some((build) => build.removed)
      ? `${options.dryRun ? 'Would free' : 'Freed'} up to ${formatBytes(freed)}; runtime ${runtimeVersion()} is kept.\n`
      : `Nothing to remove: only runtime ${runtimeVersion()} (this version) is built${pruned.length > 0 ? ', besides builds in use' : ''}.\n`,
  );
  return EXIT_OK;
}
