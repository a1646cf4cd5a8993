/** `sandcell doctor` on internet access, as a user runs it: the built CLI, a real gate, a real bubblewrap trial session. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runProcess } from './support/process.js';

const root = path.resolve(import.meta.dirname, '..');

describe('sandcell doctor: internet access', () => {
  it('says the gate opens a channel and answers on it, the forwarder is in the sandbox, and what --allow-host does', {
    timeout: 240_000,
  }, async () => {
    const result = await runProcess(process.execPath, [
      path.join(root, 'bin', 'sandcell.js'),
      'doctor',
      '--backend',
      'bubblewrap',
      '--json',
    ]);
    const report = JSON.parse(result.stdout) as { ok: boolean; checks: { level: string; title: string }[] };
    const network = report.checks.filter((check) => check.title.includes('internet access'));
    expect(network.map((check) => check.level)).toEqual(['ok', 'ok', 'ok']);
    const titles = network.map((check) => check.title);
    expect(titles).toContainEqual(
      expect.stringMatching(
        /^internet access: the gate opens a session's channel \(a unix socket in \/.+\) and refuses hosts not on its list$/,
      ),
    );
    expect(titles).toContain(
      'internet access: the forwarder is in the sandbox (/opt/sandcell/sandcell_network_forwarder.py)',
    );
    expect(titles).toContainEqual(
      expect.stringMatching(/^internet access: off for every session unless asked; `--allow-host HOST`/),
    );
  });
});
