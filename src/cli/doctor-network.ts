/**
 * `doctor`'s view of internet access (off unless a session is given an allow-list): the gate can
 * open a session's channel and answers on it, the forwarder is where a sandbox starts it, and one
 * line says what `--allow-host` does.
 */
import net from 'node:net';
import path from 'node:path';
import { KERNEL_MOUNT } from '../backends/sandbox-environment.js';
import { createGateHost } from '../network/gate-host.js';

type Add = (level: 'ok' | 'warn' | 'fail', title: string, detail?: string) => void;

/** The forwarder a sandbox with internet access runs (the supervisor starts it), inside the sandbox. */
export const FORWARDER_PATH = `${KERNEL_MOUNT}/sandcell_network_forwarder.py`;

const ASKED_HOST = 'doctor.invalid';
const PROBED_HOST = 'not-on-the-list.invalid';
const ANSWER_TIMEOUT_MS = 10_000;

/** What `--allow-host` does, in one line. */
export function checkAllowHost(add: Add): void {
  add(
    'ok',
    'internet access: off for every session unless asked; `--allow-host HOST` (run, repl, exec, chat, ask, serve) lets its sessions reach HOST over HTTP and HTTPS through a gate on this machine, and nothing else',
  );
}

/**
 * Opens a channel as a session would, on a gate of its own, and asks it for a host its list does
 * not name: the gate's refusal (403 host-not-allowed) shows it listens and decides.
 */
export async function checkGateChannel(add: Add): Promise<void> {
  let channel: Awaited<ReturnType<ReturnType<typeof createGateHost>['openChannel']>> | undefined;
  try {
    channel = await createGateHost().openChannel({ sessionId: 'doctor', allow: [ASKED_HOST] });
    const answer = await askGate(
      channel.socketPath,
      `CONNECT ${PROBED_HOST}:443 HTTP/1.1\r\nHost: ${PROBED_HOST}:443\r\n\r\n`,
    );
    const refused = /^HTTP\/1\.1 403 /.test(answer) && /x-sandcell-gate-rule: host-not-allowed/i.test(answer);
    add(
      refused ? 'ok' : 'fail',
      refused
        ? `internet access: the gate opens a session's channel (a unix socket in ${path.dirname(path.dirname(channel.socketPath))}) and refuses hosts not on its list`
        : 'internet access: the gate answered its channel unexpectedly',
      refused ? undefined : answer.split('\r\n')[0],
    );
  } catch (error) {
    add('fail', 'internet access: the gate could not open a channel', (error as Error).message);
  } finally {
    await channel?.close();
  }
}

/** The Python a trial session runs: does the forwarder exist where the supervisor starts it from. */
export const FORWARDER_PROBE = `import os\nprint(os.path.isfile(${JSON.stringify(FORWARDER_PATH)}))`;

/** The trial session's answer to FORWARDER_PROBE, as a check line. */
export function reportForwarder(add: Add, label: string, probeOutput: string): void {
  const present = probeOutput.trim() === 'True';
  add(
    present ? 'ok' : 'fail',
    present
      ? `${label}internet access: the forwarder is in the sandbox (${FORWARDER_PATH})`
      : `${label}internet access: the forwarder is missing from the sandbox (${FORWARDER_PATH})`,
    present
      ? undefined
      : label
        ? 'Rebuild the runtime image: `sandcell image build --force`.'
        : 'Rebuild sandcell (`npm run build`) or the runtime root filesystem: `sandcell image build --backend bubblewrap`.',
  );
}

function askGate(socketPath: string, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ path: socketPath });
    let answer = '';
    const timer = setTimeout(() => socket.destroy(new Error('the gate did not answer')), ANSWER_TIMEOUT_MS);
    socket.setEncoding('latin1');
    socket.on('connect', () => socket.write(request));
    // The head is enough: stop reading past 4 KiB whatever the gate sends.
    socket.on('data', (chunk: string) => {
      answer += chunk;
      if (answer.includes('\r\n\r\n') || answer.length > 4096) socket.end();
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
