/** The `--backend`, `--rootfs` and `--env` options shared by the commands that start sessions. */
import { type Command, Option } from 'commander';
import { AutoBackend, BACKEND_NAMES, DEFAULT_BACKEND_NAME, isBackendName, resolveBackend } from '../backends/select.js';
import type { SandboxBackend } from '../backends/spec.js';
import { CliExit, EXIT_USAGE } from './exit-codes.js';
import { dim } from './render.js';

export interface BackendCliOptions {
  backend?: string;
  rootfs?: string;
  /** The environment sessions run in (`sandcell env build`). */
  env?: string;
}

/** Adds --backend, --rootfs and --env to a command. */
export function addBackendOptions(command: Command): Command {
  for (const option of [
    new Option('-b, --backend <name>', 'where sandboxes run (auto: bubblewrap when usable, else Docker)')
      .choices([...BACKEND_NAMES])
      .env('SANDCELL_BACKEND'),
    new Option(
      '--rootfs <dir>',
      'bubblewrap and gvisor: run on a runtime root filesystem instead of the host /usr (`runtime`: the one `sandcell image build --backend bubblewrap` built)',
    ).env('SANDCELL_ROOTFS'),
    new Option('--env <name>', 'the environment to run in (`sandcell env list`); default: the runtime itself').env(
      'SANDCELL_ENVIRONMENT',
    ),
  ])
    command.addOption(option);
  return command;
}

/** The backend the options name; with `auto`, tells the user (on stderr) which one it picked and why. */
export async function backendFromOptions(options: BackendCliOptions, quiet = false): Promise<SandboxBackend> {
  // commander has already put SANDCELL_BACKEND in `options.backend` when no flag was given.
  const name = options.backend ?? DEFAULT_BACKEND_NAME;
  if (!isBackendName(name)) {
    throw new CliExit(EXIT_USAGE, `--backend must be one of ${BACKEND_NAMES.join(', ')}; got ${name}.`);
  }
  if (options.rootfs && name === 'docker') {
    throw new CliExit(
      EXIT_USAGE,
      '--rootfs applies to the bubblewrap backend; the Docker backend always runs on the runtime image.',
    );
  }
  const rootfs = options.rootfs;
  const backend = resolveBackend(name, rootfs ? { bubblewrap: { rootfs }, gvisor: { rootfs } } : undefined);
  if (backend instanceof AutoBackend) {
    const { backend: chosen, reason } = await backend.selection();
    if (!quiet) process.stderr.write(dim(`sandcell: using the ${chosen.name} backend — ${reason}\n`, process.stderr));
  }
  return backend;
}
