/**
 * Runs the layer script as root under bwrap: its own PID, IPC, UTS and network namespaces, a few
 * capabilities dropped, the staged inputs bound in, the build's gate and forwarder when it has a
 * network. Its output becomes progress (each `sandcell-step:` line a stage; a setup command's lines
 * shown as they come), and a failure says which step failed, with its exit status and its last lines.
 */
import { ImageBuildError } from '../errors.js';
import { type BuildProgress, runProcess } from '../image/rootfs.js';
import { kernelDirectory } from '../kernel/index.js';
import type { BuildGate } from './build-network.js';
import type { EnvironmentDescription } from './description.js';
import { inOverlay, type LayerOverlay } from './layer-overlay.js';
import {
  BUILD_FORWARDER_IMPORTS,
  BUILD_FORWARDER_MODULE,
  BUILD_GATE_SOCKET,
  BUILD_NETWORK_DIRECTORY,
  SETUP_FAILED_MARKER,
  STAGING_DIRECTORY,
  setupIndex,
} from './layer-script.js';

/** Lines of a failing step's own output kept for the error. */
const TAIL_LINES = 20;
/** How much of a failing setup command the error quotes. */
const COMMAND_QUOTED_CHARACTERS = 200;

/**
 * Capabilities the layer's root does not need to install packages, dropped so that the network
 * namespace and the gate stay its only way out (no new interfaces, raw sockets, mounts or modules).
 */
const DROPPED_CAPABILITIES = [
  'CAP_NET_ADMIN',
  'CAP_NET_RAW',
  'CAP_SYS_ADMIN',
  'CAP_SYS_MODULE',
  'CAP_SYS_PTRACE',
  'CAP_SYS_RAWIO',
  'CAP_SYS_BOOT',
  'CAP_BPF',
];

export interface LayerRun {
  bwrap: string;
  /** The root the layer runs in: the overlay's merged directory, or a copy of the runtime. */
  root: string;
  /** Present: `root` is this overlay's mount point, mounted for the run. */
  overlay?: LayerOverlay;
  /** The host directory holding `layer.sh` and the inputs, bound at STAGING_DIRECTORY. */
  staging: string;
  description: EnvironmentDescription;
  gate?: BuildGate;
  onProgress?: (progress: BuildProgress) => void;
  signal?: AbortSignal;
}

export async function runLayer(run: LayerRun): Promise<void> {
  const network = run.gate
    ? [
        ...[BUILD_FORWARDER_MODULE, ...BUILD_FORWARDER_IMPORTS].flatMap((module) => [
          '--ro-bind',
          `${kernelDirectory}/${module}.py`,
          `${BUILD_NETWORK_DIRECTORY}/${module}.py`,
        ]),
        '--bind',
        run.gate.socketPath,
        BUILD_GATE_SOCKET,
      ]
    : [];
  const args = [
    '--bind',
    run.root,
    '/',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    // Nothing under /run stays in the environment; the gate's socket and the forwarder go there.
    '--tmpfs',
    '/run',
    '--dir',
    BUILD_NETWORK_DIRECTORY,
    ...network,
    '--bind',
    run.staging,
    STAGING_DIRECTORY,
    '--unshare-net',
    ...DROPPED_CAPABILITIES.flatMap((capability) => ['--cap-drop', capability]),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--die-with-parent',
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/sbin:/usr/bin:/sbin:/bin',
    '--setenv',
    'HOME',
    '/root',
    '--chdir',
    '/',
    '/bin/sh',
    `${STAGING_DIRECTORY}/layer.sh`,
  ];
  const command = run.overlay ? inOverlay(run.overlay, run.bwrap, args) : { command: run.bwrap, args };
  let tail: string[] = [];
  let stage = 'running the layer';
  let setupStatus: number | undefined;
  await runProcess(command.command, command.args, run.signal, {}, (line) => {
    if (line.startsWith('sandcell-step: ')) {
      stage = line.slice('sandcell-step: '.length);
      tail = [];
      run.onProgress?.({ stage });
      return;
    }
    if (line.startsWith(SETUP_FAILED_MARKER)) {
      setupStatus = Number(line.slice(SETUP_FAILED_MARKER.length));
      return;
    }
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
    // The user's own commands are shown as they run; the rest (apt, pip) is the spinner's detail.
    const output = setupIndex(stage) !== undefined ? { output: line } : {};
    run.onProgress?.({ stage, detail: line.slice(0, 200), ...output });
  }).catch((error: unknown) => {
    throw new ImageBuildError(failureMessage(run, stage, setupStatus, tail, (error as Error).message), {
      cause: error,
    });
  });
}

function failureMessage(
  run: LayerRun,
  stage: string,
  setupStatus: number | undefined,
  tail: string[],
  processError: string,
): string {
  const index = setupIndex(stage);
  const command = index === undefined ? undefined : run.description.setup[index];
  const status = setupStatus ?? Number(/exited with (\d+)/.exec(processError)?.[1]);
  const lines = tail.length > 0 ? `\nIts last lines of output:\n  ${tail.join('\n  ')}` : '\nIt printed nothing.';
  const refusals = run.gate?.refusals() ?? [];
  const refused = refusals.length > 0 ? `\nThe build's network gate refused:\n  ${refusals.join('\n  ')}` : '';
  if (command !== undefined) {
    return `The environment build failed: ${stage} exited with status ${status}:\n  ${quote(command)}${lines}${refused}`;
  }
  const how = Number.isFinite(status) ? `exit status ${status}` : processError;
  return `The environment build failed while ${stage} (${how}).${lines}${refused}`;
}

/** A command as the error quotes it: on one line, cut at COMMAND_QUOTED_CHARACTERS. */
function quote(command: string): string {
  const oneLine = command.trim().replace(/\s*\n\s*/g, ' ⏎ ');
  return oneLine.length > COMMAND_QUOTED_CHARACTERS ? `${oneLine.slice(0, COMMAND_QUOTED_CHARACTERS)}…` : oneLine;
}
