#!/usr/bin/env node
// `npm run dev`: the web UI with hot reload against a local sandcell server.
// Builds the server (tsc, quick when nothing changed), starts `sandcell serve`
// on 127.0.0.1 (port 8080, or SANDCELL_PORT) with any extra arguments
// (`npm run dev -- --provider openai --model gpt-4.1`), and Vite's dev server,
// which proxies the API to it. Ctrl-C stops both.
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { root, setupSteps } from './setup-common.mjs';

const { say, fail } = setupSteps('dev');
const port = process.env.SANDCELL_PORT ?? '8080';
const serverUrl = `http://127.0.0.1:${port}`;
const extra = process.argv.slice(2);

say('building the server (tsc)…');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
for (const [command, args] of [
  [process.execPath, [tsc, '-p', 'tsconfig.build.json']],
  [process.execPath, ['scripts/copy-kernel.mjs']],
]) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0)
    fail(`\`${path.basename(args[0])}\` failed; fix the errors above and run \`npm run dev\` again.`);
}

const children = [];
let stopping = false;

function start(name, command, args, env = {}) {
  const child = spawn(command, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  child.on('exit', (code, signal) => {
    if (stopping) return;
    say(`${name} stopped (${signal ?? `exit ${code}`}); stopping the other one.`);
    stop(code ?? 1);
  });
  children.push(child);
  return child;
}

function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  }
  // The server finishes running code for up to its shutdown grace; don't wait forever.
  const deadline = setTimeout(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    process.exit(code);
  }, 15_000);
  deadline.unref();
  Promise.all(
    children.map(
      (child) =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) resolve();
          else child.once('exit', resolve);
        }),
    ),
  ).then(() => process.exit(code));
}

process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

say(`starting sandcell serve on ${serverUrl}${extra.length ? ` with ${extra.join(' ')}` : ''}`);
start('sandcell serve', process.execPath, [
  'bin/sandcell.js',
  'serve',
  '--host',
  '127.0.0.1',
  '--port',
  port,
  ...extra,
]);

say('starting the Vite dev server (hot reload); open the URL it prints.');
start(
  'vite',
  process.execPath,
  [path.join(root, 'node_modules', 'vite', 'bin', 'vite.js'), '--config', 'web/vite.config.ts'],
  {
    SANDCELL_URL: serverUrl,
  },
);
