/**
 * A toy shell for the scripted backend's commands, shared by the suites that
 * test sandcell's own command logic (session.commands, /v1 commands, the
 * registry's command path): each command name does one recognisable thing.
 */
import type { CommandScript } from '../../src/backends/scripted/index.js';

/**
 * `echo X` prints X; `both` prints to stdout, stderr, stdout; `lines` the same with pauses;
 * `fail N` exits with N; `where` prints its cwd and $GREETING; `cat` echoes stdin; `sleep` prints
 * `started` and runs until killed; `pause MS` sleeps MS then prints `rested`; `flood` prints past
 * small caps; `crash` kills the sandbox; `nowhere` and `unspawnable` cannot start; anything else
 * is "command not found" (127).
 */
export const toyShell: CommandScript = ({ command, cwd, env }) => {
  const [name, ...rest] = command.split(' ');
  const argument = rest.join(' ');
  switch (name) {
    case 'echo':
      return [{ type: 'stdout', text: `${argument}\n` }];
    case 'both':
      return [
        { type: 'stdout', text: 'one\n' },
        { type: 'stderr', text: 'two\n' },
        { type: 'stdout', text: 'three\n' },
      ];
    case 'lines':
      return [
        { type: 'stdout', text: 'one\n' },
        { type: 'sleep', ms: 30 },
        { type: 'stderr', text: 'two\n' },
        { type: 'sleep', ms: 30 },
        { type: 'stdout', text: 'three\n' },
      ];
    case 'fail':
      return [
        { type: 'stderr', text: 'failing\n' },
        { type: 'exit', code: Number(argument) },
      ];
    case 'where':
      return [{ type: 'stdout', text: `${cwd} ${env?.GREETING}` }];
    case 'cat':
      return [{ type: 'echo-stdin' }];
    case 'sleep':
      return [{ type: 'stdout', text: 'started\n' }, { type: 'hang' }];
    case 'pause':
      return [
        { type: 'sleep', ms: Number(argument) },
        { type: 'stdout', text: 'rested\n' },
      ];
    case 'flood':
      return [
        { type: 'stdout', text: 'x'.repeat(3000) },
        { type: 'stdout', text: 'y'.repeat(3000) },
        { type: 'stderr', text: 'e'.repeat(5000) },
      ];
    case 'crash':
      return [{ type: 'crash-sandbox' }];
    case 'nowhere':
      return [{ type: 'refuse-start', code: 'invalid-cwd', message: 'no such directory: /nowhere' }];
    case 'unspawnable':
      return [{ type: 'refuse-start', code: 'spawn-failed', message: 'bash: not found' }];
    default:
      return [
        { type: 'stderr', text: `${name}: command not found\n` },
        { type: 'exit', code: 127 },
      ];
  }
};
