/**
 * A Python context's state (sandcell_python_state.py) written by one process
 * and read back by another, on the host's real python3 with IPython and dill:
 * every kind of name the snapshots issue lists comes back, what cannot be
 * pickled is named with its reason and costs only itself, and a file that is
 * not a state file is refused. In a sandbox, through the kernel, once it is
 * wired in.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../test/support/process.js';

const KERNEL_DIRECTORY = path.dirname(fileURLToPath(import.meta.url));
const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-python-state-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * `save FILE CODE`: runs CODE in a fresh IPython shell and writes its state to FILE.
 * `load FILE CODE`: reads FILE into a fresh shell, then runs CODE. Each prints its report as JSON.
 */
const DRIVER = `
import json, os, sys
sys.path.insert(0, os.environ['KERNEL_DIRECTORY'])
import sandcell_python_state as state
from IPython.core.interactiveshell import InteractiveShell
mode, file, code = sys.argv[1:4]
shell = InteractiveShell.instance()
baseline = state.Baseline(shell.user_ns)
class FrontToBack:
    """A file that can only be written on: as a pipe is."""
    def __init__(self, out):
        self.write = out.write
if mode in ('save', 'stream'):
    result = shell.run_cell(code)
    result.raise_error()
    with open(file, 'wb') as out:
        target = FrontToBack(out) if mode == 'stream' else out
        report = state.save(shell.user_module, baseline, shell.execution_count, target, stream=mode == 'stream')
else:
    with open(file, 'rb') as source:
        report = state.load(source, shell.user_module)
    result = shell.run_cell(code)
    result.raise_error()
print('REPORT ' + json.dumps(report))
`;

interface Run {
  report: Record<string, unknown>;
  printed: string;
}

async function python(mode: 'save' | 'stream' | 'load', file: string, code: string, cwd = scratch): Promise<Run> {
  const finished = await runProcess('/usr/bin/python3', ['-c', DRIVER, mode, file, code], {
    cwd,
    env: { KERNEL_DIRECTORY, HOME: scratch, PATH: '/usr/bin:/bin', MPLBACKEND: 'Agg' },
  });
  if (finished.code !== 0) throw new Error(`python3 ${mode} failed (${finished.code}):\n${finished.stderr}`);
  const lines = finished.stdout.trimEnd().split('\n');
  const report = JSON.parse(lines.pop()!.replace(/^REPORT /, '')) as Record<string, unknown>;
  return { report, printed: lines.join('\n') };
}

describe('a Python context’s state, written by one process and read back by another', () => {
  it('brings back values, frames and arrays, functions, lambdas, classes and their instances, modules, cwd, env and sys.path', async () => {
    const file = path.join(scratch, 'whole.state');
    const saved = await python(
      'save',
      file,
      `
import numpy as np
import pandas as pd
import os, sys, socket
from math import sqrt
frame = pd.DataFrame({'a': range(5), 'b': list('vwxyz')})
array = np.arange(10)
numbers = {'one': 1, 'list': [1, 2, 3]}
other = numbers
class Point:
    def __init__(self, x):
        self.x = x
    def norm(self):
        return abs(self.x)
point = Point(-3)
def scaled(k):
    return point.norm() * k
square = lambda v: v * v
_kept_too = 'a private name of the user'
connection = socket.socket()
pending = (i for i in range(3))
os.makedirs('work', exist_ok=True)
os.chdir('work')
os.environ['STATE_TEST'] = 'set'
sys.path.append('/opt/state-test')
`,
    );
    expect(saved.report.skipped).toEqual([
      { name: 'connection', reason: 'socket' },
      { name: 'pending', reason: 'generator' },
    ]);
    expect(saved.report.saved).toEqual(
      expect.arrayContaining(['np', 'pd', 'sqrt', 'frame', 'array', 'Point', 'point', 'scaled', 'square', '_kept_too']),
    );

    const loaded = await python(
      'load',
      file,
      `
import json
print(json.dumps({
  'frame': int(frame.a.sum()), 'letters': ''.join(frame.b), 'array': int(np.sum(array)),
  'shared': other is numbers, 'instance': isinstance(point, Point), 'scaled': scaled(2),
  'square': square(4), 'sqrt': sqrt(16), 'private': _kept_too,
  'cwd': os.getcwd(), 'env': os.environ.get('STATE_TEST'), 'path': '/opt/state-test' in sys.path,
}))
point = Point(10)
print(scaled(2))
print(Point(5).norm())
`,
    );
    const [first, afterRebinding, newInstance] = loaded.printed.split('\n');
    expect(JSON.parse(first!)).toEqual({
      frame: 10,
      letters: 'vwxyz',
      array: 45,
      shared: true,
      instance: true,
      scaled: 6,
      square: 16,
      sqrt: 4,
      private: 'a private name of the user',
      cwd: path.join(scratch, 'work'),
      env: 'set',
      path: true,
    });
    // A function sees the names as they are now, not copies taken when it was saved.
    expect(afterRebinding).toBe('20');
    expect(newInstance).toBe('5');
    expect(loaded.report.skipped).toEqual([
      { name: 'connection', reason: 'socket' },
      { name: 'pending', reason: 'generator' },
    ]);
    expect(loaded.report.restored).toEqual(expect.arrayContaining(['frame', 'point', 'Point', 'np']));
    expect(loaded.report.executionCount).toBe(1);
  });

  it('says which names could not come back, and why, keeping the rest', async () => {
    const file = path.join(scratch, 'gone.state');
    writeFileSync(path.join(scratch, 'vanishing.py'), 'VALUE = 7\n');
    await python('save', file, `import sys; sys.path.insert(0, '${scratch}'); import vanishing; kept = 41`);
    rmSync(path.join(scratch, 'vanishing.py'));
    const loaded = await python('load', file, 'print(kept + 1)', scratch);
    expect(loaded.printed).toBe('42');
    expect(loaded.report.skipped).toEqual([
      { name: 'vanishing', reason: "module vanishing could not be imported: No module named 'vanishing'" },
    ]);
  });

  it('written as a stream (front to back, as into a pipe), the same state comes back, what cannot be pickled named', async () => {
    const file = path.join(scratch, 'stream.state');
    const saved = await python(
      'stream',
      file,
      `
import numpy as np, socket
array = np.arange(12).reshape(3, 4)
numbers = [1, 2, 3]
same = numbers
connection = socket.socket()
pending = (i for i in range(3))
class Box:
    def __init__(self, v):
        self.v = v
box = Box(array)
`,
    );
    expect(saved.report.skipped).toEqual([
      { name: 'connection', reason: 'socket' },
      { name: 'pending', reason: 'generator' },
    ]);
    const loaded = await python(
      'load',
      file,
      'print(int(array.sum()), same is numbers, isinstance(box, Box), box.v is array)',
    );
    expect(loaded.printed).toBe('66 True True True');
    expect(loaded.report.skipped).toEqual(saved.report.skipped);
    expect(loaded.report.restored).toEqual(expect.arrayContaining(['np', 'array', 'numbers', 'same', 'Box', 'box']));
  });

  it("pickles a NumPy array's data from the array's own memory, and every kind of array comes back as it was (a read-only one read-only)", async () => {
    const file = path.join(scratch, 'arrays.state');
    const script = `
import os, sys, tracemalloc
sys.path.insert(0, os.environ['KERNEL_DIRECTORY'])
import numpy as np
import dill
import sandcell_python_state as state
main = sys.modules['__main__']
class Tagged(np.ndarray):
    pass
big = np.random.default_rng(1).random((1024, 8192))  # 64 MiB
frozen = big[:16].copy()
frozen.flags.writeable = False
tagged = np.arange(6.0).view(Tagged)
tagged.note = 'kept'
values = {'big': big, 'again': big, 'fortran': np.asfortranarray(big[:64]), 'strided': big[:8, ::3],
          'frozen': frozen, 'objects': np.array([1, 'two', None], dtype=object), 'tagged': tagged}
tracemalloc.start()
with open(sys.argv[1], 'wb') as out:
    state.pickle_into(values, main, out)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
with open(sys.argv[1], 'rb') as source:
    loaded = dill.Unpickler(source).load()
print(peak < 16 << 20, all(np.array_equal(loaded[k], values[k]) for k in values if k != 'objects'),
      list(loaded['objects']) == [1, 'two', None], loaded['again'] is loaded['big'],
      loaded['big'].flags.writeable, loaded['frozen'].flags.writeable, loaded['fortran'].flags.f_contiguous,
      type(loaded['tagged']).__name__, getattr(loaded['tagged'], 'note', None))
`;
    const ran = await runProcess('/usr/bin/python3', ['-c', script, file], {
      cwd: scratch,
      env: { KERNEL_DIRECTORY, HOME: scratch, PATH: '/usr/bin:/bin' },
    });
    expect(ran.stderr).toBe('');
    // Under 16 MiB traced while 64 MiB were pickled: no copy of the data was made on the way.
    expect(ran.stdout.trim()).toBe('True True True True True False True Tagged kept');
  });

  it('still reads a state file of format 1, written before the header moved behind the pickle', async () => {
    const file = path.join(scratch, 'format-1.state');
    // What the previous version wrote: the magic line, the header's length, the header, the pickle.
    const header = JSON.stringify({
      modules: { math: 'math' },
      values: ['kept'],
      skipped: [],
      cwd: scratch,
      environ: { set: {}, unset: [] },
      sysPath: [],
      executionCount: 4,
    });
    const pickle = await runProcess('/usr/bin/python3', [
      '-c',
      'import pickle; print(pickle.dumps({"kept": 41}, protocol=4).hex())',
    ]);
    writeFileSync(
      file,
      Buffer.concat([
        Buffer.from(`sandcell-python-state 1\n${Buffer.byteLength(header)}\n${header}`),
        Buffer.from(pickle.stdout.trim(), 'hex'),
      ]),
    );
    const loaded = await python('load', file, 'print(kept + 1, math.floor(2.5))');
    expect(loaded.printed).toBe('42 2');
    expect(loaded.report).toEqual({ restored: ['math', 'kept'], skipped: [], executionCount: 4 });
  });

  it('refuses a file that is not a state file before unpickling anything', async () => {
    const file = path.join(scratch, 'not-a-state');
    const mark = path.join(scratch, 'ran');
    // A pickle that runs a shell command when loaded.
    writeFileSync(file, `cos\nsystem\n(S'touch ${mark}'\ntR.`);
    await expect(python('load', file, 'pass')).rejects.toThrow('not a sandcell Python state file');
    expect(existsSync(mark)).toBe(false);
  });
});
