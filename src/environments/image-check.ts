/**
 * Whether an image sandcell did not build can run sandcell's kernel, checked
 * in a throwaway container (no network, read-only, no capabilities, an
 * unprivileged uid, as sessions run): python3 3.9 or newer, what the kernel
 * imports (IPython's core, which brings traitlets), ctypes (the seccomp
 * loader's), and /bin/sleep (the container that keeps /mnt/data mounted).
 * Languages other than Python are optional: the supervisor offers those
 * whose programs it finds, so the check only reports them.
 */
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type Dockerode from 'dockerode';
import { MANAGED_LABEL } from '../backends/docker/container-config.js';
import { engineErrorText } from '../backends/docker/engine-errors.js';
import { ownerLabels } from '../backends/docker/owner.js';
import { InvalidInputError } from '../errors.js';
import type { ImageEnvironmentFacts } from './store.js';

/** The PATH sessions get (sandboxEnvironment), so a program found here is found there. */
const SESSION_PATH = '/usr/local/bin:/usr/bin:/bin';
const MAX_OUTPUT_BYTES = 64 * 1024;
const CHECK_TIMEOUT_MS = 120_000;

/** No f-strings: an old python3 must still answer, so that its version can be named. */
const CHECK_SCRIPT = `
import json, os, sys
facts = {"python": sys.executable, "version": "%d.%d.%d" % tuple(sys.version_info[:3])}
try:
    import IPython.core.interactiveshell, IPython
    facts["ipython"] = IPython.__version__
except Exception as error:
    facts["ipythonError"] = "%s: %s" % (type(error).__name__, error)
try:
    import ctypes
    ctypes.CDLL(None)
    facts["ctypes"] = True
except Exception as error:
    facts["ctypesError"] = "%s: %s" % (type(error).__name__, error)
try:
    import importlib.util
    facts["matplotlibInline"] = importlib.util.find_spec("matplotlib_inline") is not None
except Exception:
    facts["matplotlibInline"] = False
def found(name):
    for directory in os.environ.get("PATH", "").split(":"):
        candidate = os.path.join(directory, name)
        if directory and os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return True
    return False
facts["programs"] = dict((name, found(name)) for name in ("node", "bash", "R"))
facts["sleep"] = os.access("/bin/sleep", os.X_OK)
print(json.dumps(facts))
`;

/** What the check found: the facts an environment record keeps (store.ts), and the image's size. */
export interface ImageFacts extends Omit<ImageEnvironmentFacts, 'source' | 'kind'> {
  sizeBytes: number;
}

interface ProbeAnswer {
  python?: string;
  version?: string;
  ipython?: string;
  ipythonError?: string;
  ctypes?: boolean;
  ctypesError?: string;
  matplotlibInline?: boolean;
  programs?: Record<string, boolean>;
  sleep?: boolean;
}

/** Checks `image` (a tag or id in the engine); throws InvalidInputError saying what is missing and how to add it. */
export async function checkImage(docker: Dockerode, image: string): Promise<ImageFacts> {
  let inspected: Dockerode.ImageInspectInfo;
  try {
    inspected = await docker.getImage(image).inspect();
  } catch (error) {
    throw new InvalidInputError(
      `The image ${image} is not in Docker Engine (${engineErrorText(error)}). Pull or build it first: sandcell never pulls.`,
    );
  }
  const { code, stdout, stderr } = await runProbe(docker, inspected.Id);
  const last = stdout.trim().split('\n').pop() ?? '';
  let answer: ProbeAnswer | undefined;
  try {
    answer = code === 0 ? (JSON.parse(last) as ProbeAnswer) : undefined;
  } catch {
    answer = undefined;
  }
  if (!answer) {
    const detail = (stderr || stdout).trim().slice(-2000);
    throw new InvalidInputError(
      `The image ${image} has no working python3 on PATH (${SESSION_PATH}): sandcell runs its kernel with the image's own Python 3.9 or newer. Add \`apt-get install -y python3 python3-ipython\` (Debian, Ubuntu) to its Dockerfile, or start FROM a python image.${detail ? `\n  python3 said: ${detail}` : ''}`,
    );
  }
  const problems = problemsOf(answer);
  if (problems.length > 0) {
    throw new InvalidInputError(
      `The image ${image} cannot run sandcell's kernel:\n  - ${problems.join('\n  - ')}\nNothing was registered.`,
    );
  }
  const languages = ['python'];
  if (answer.programs?.node) languages.push('javascript', 'typescript');
  if (answer.programs?.bash) languages.push('bash');
  if (answer.programs?.R) languages.push('r');
  return {
    id: inspected.Id,
    python: answer.python as string,
    pythonVersion: answer.version as string,
    ipythonVersion: answer.ipython as string,
    matplotlibInline: answer.matplotlibInline === true,
    languages,
    sizeBytes: inspected.Size,
  };
}

function problemsOf(answer: ProbeAnswer): string[] {
  const problems: string[] = [];
  const [major = 0, minor = 0] = (answer.version ?? '0.0').split('.').map(Number);
  if (major < 3 || (major === 3 && minor < 9)) {
    problems.push(`its python3 is ${answer.version}; sandcell's kernel needs Python 3.9 or newer`);
  }
  if (!answer.python?.startsWith('/')) {
    problems.push('its python3 does not know its own path (sys.executable is empty)');
  }
  if (!answer.ipython) {
    problems.push(
      `the image has no IPython (${answer.ipythonError ?? 'not importable'}): add \`pip install ipython\` or \`apt-get install python3-ipython\` to its Dockerfile`,
    );
  }
  if (!answer.ctypes) {
    problems.push(
      `its Python has no ctypes (${answer.ctypesError ?? 'not importable'}), which loads sandcell's seccomp filter: install the full python3 (Debian: libpython3-stdlib)`,
    );
  }
  if (!answer.sleep) {
    problems.push("it has no /bin/sleep, which keeps a session's /mnt/data mounted: add coreutils (or busybox)");
  }
  return problems;
}

/** Runs the check script as an unprivileged uid, with no network, and collects its output (bounded). */
async function runProbe(
  docker: Dockerode,
  imageId: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let container: Dockerode.Container;
  try {
    container = await docker.createContainer({
      name: `sandcell-image-check-${process.pid}-${randomUUID().slice(0, 8)}`,
      Image: imageId,
      Entrypoint: ['python3', '-I', '-c', CHECK_SCRIPT],
      Cmd: [],
      User: '65534:65534',
      WorkingDir: '/tmp',
      Env: [`PATH=${SESSION_PATH}`, 'HOME=/tmp', 'LANG=C.UTF-8'],
      Labels: { [MANAGED_LABEL]: '1', ...ownerLabels() },
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      NetworkDisabled: true,
      HostConfig: {
        NetworkMode: 'none',
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges:true'],
        ReadonlyRootfs: true,
        Tmpfs: { '/tmp': 'rw,nosuid,nodev,size=67108864,mode=1777' },
        Memory: 512 * 2 ** 20,
        PidsLimit: 64,
      },
    });
  } catch (error) {
    // "executable file not found": no python3 at all.
    return { code: null, stdout: '', stderr: engineErrorText(error) };
  }
  try {
    const stream = (await container.attach({ stream: true, stdout: true, stderr: true })) as NodeJS.ReadableStream;
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    docker.modem.demuxStream(stream, stdout, stderr);
    const ended = () => {
      stdout.end();
      stderr.end();
    };
    stream.once('end', ended);
    stream.once('close', ended);
    const collected = { stdout: collect(stdout), stderr: collect(stderr) };
    try {
      await container.start();
    } catch (error) {
      return { code: null, stdout: '', stderr: engineErrorText(error) };
    }
    const timer = setTimeout(() => void container.kill().catch(() => undefined), CHECK_TIMEOUT_MS);
    const result = (await container.wait().finally(() => clearTimeout(timer))) as { StatusCode?: number };
    // The attachment ends with the container; should it linger, what arrived is enough.
    setTimeout(ended, 5000).unref();
    return { code: result.StatusCode ?? null, stdout: await collected.stdout, stderr: await collected.stderr };
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}

function collect(stream: PassThrough): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    stream.on('data', (chunk: Buffer) => {
      if (text.length < MAX_OUTPUT_BYTES) text += chunk.toString('utf8');
    });
    stream.on('end', () => resolve(text.slice(0, MAX_OUTPUT_BYTES)));
  });
}
