/**
 * Completion, inspection and is-complete in real kernels, for each language
 * of CONTRACT_LANGUAGES: what an editor or a Jupyter client asks while its
 * user types. Part of the backend contract.
 */
import { expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import type { InputRequest } from '../../src/session/execution.js';
import type { Language } from '../../src/session/languages.js';
import type { Session } from '../../src/session/session.js';
import { withSession } from './contract-support.js';

/** The end of `code`, counted in code points as the protocol counts cursors. */
function end(code: string): number {
  return [...code].length;
}

async function ran(session: Session, code: string, language: Language): Promise<void> {
  const execution = await session.run(code, { language });
  expect(execution.error, code).toBeUndefined();
}

/** Every case of this file. */
export function assistContractCases(backend: SandboxBackend): void {
  pythonAssistCases(backend);
  bashAssistCases(backend);
  javascriptAssistCases(backend);
  rAssistCases(backend);
  everyLanguageAssistCases(backend);
  inputCases(backend);
}

function pythonAssistCases(backend: SandboxBackend): void {
  it('python: completes names, attributes, dict keys and paths from the live state', async () => {
    await withSession(backend, {}, async (session) => {
      await ran(
        session,
        'import os\nsandcell_value_one = 1\nsandcell_value_two = 2\nsettings = {"alpha": 1}',
        'python',
      );
      await session.files.write('report-2024.csv', 'x');

      const names = await session.complete('sandcell_val', 12);
      expect(names).toMatchObject({ cursorStart: 0, cursorEnd: 12 });
      expect(names.matches).toEqual(expect.arrayContaining(['sandcell_value_one', 'sandcell_value_two']));
      const attributes = await session.complete('os.pa', 5);
      expect(attributes).toMatchObject({ cursorStart: 3, cursorEnd: 5 });
      expect(attributes.matches).toContain('path');
      expect(attributes.metadata._jupyter_types_experimental).toEqual(
        expect.arrayContaining([expect.objectContaining({ text: 'path', type: 'module' })]),
      );
      const code = 'settings["al';
      expect((await session.complete(code, end(code))).matches.join(' ')).toContain('alpha');
      const path = 'open("rep';
      expect((await session.complete(path, end(path))).matches.join(' ')).toContain('report-2024.csv');
      expect((await session.complete('zzz_nothing_is_named_so', 23)).matches).toEqual([]);
    });
  });

  it('python: cursor positions count code points, as Jupyter does', async () => {
    await withSession(backend, {}, async (session) => {
      await ran(session, 'sandcell_value_one = 1', 'python');
      // The emoji is one code point and two UTF-16 units: the span starts after it, counted once.
      const code = 'x = "😀"; sandcell_val';
      const completion = await session.complete(code, end(code));
      expect(completion).toMatchObject({ cursorStart: end('x = "😀"; '), cursorEnd: end(code) });
      expect(completion.matches).toContain('sandcell_value_one');
    });
  });

  it('python: inspects the name at the cursor with its signature and docstring; an unknown name is not found', async () => {
    await withSession(backend, {}, async (session) => {
      await ran(session, 'def documented(a, b=2):\n    "Adds things up."\n    return a', 'python');
      const help = await session.inspect('documented(', 10);
      expect(help.found).toBe(true);
      expect(help.data['text/plain']).toContain('Adds things up.');
      expect(help.data['text/plain']).toContain('documented(a, b=2)');
      const source = await session.inspect('documented', 10, { detailLevel: 1 });
      expect(source.data['text/plain']).toContain('return a');
      expect(await session.inspect('no_such_name_anywhere', 5)).toEqual({ found: false, data: {}, metadata: {} });
    });
  });
}

function bashAssistCases(backend: SandboxBackend): void {
  it("bash: completes variables, functions and commands, and files from the shell's directory", async () => {
    await withSession(backend, {}, async (session) => {
      await ran(
        session,
        'sandcell_var_one=1; sandcell_func() { :; }; mkdir -p work/sandcell_dir && cd work && touch sandcell_dir/report.csv',
        'bash',
      );
      const variable = await session.complete('echo "${sandcell_va', 19, { language: 'bash' });
      expect(variable).toMatchObject({ cursorStart: 8, cursorEnd: 19 });
      expect(variable.matches).toContain('sandcell_var_one');
      const command = await session.complete('ls | sandcell_fu', 16, { language: 'bash' });
      expect(command).toMatchObject({ matches: ['sandcell_func'], cursorStart: 5, cursorEnd: 16 });
      expect((await session.complete('grep', 4, { language: 'bash' })).matches).toContain('grep');
      expect(await session.complete('cat sandcell_dir/rep', 20, { language: 'bash' })).toMatchObject({
        matches: ['sandcell_dir/report.csv'],
        cursorStart: 4,
      });
      expect((await session.complete('cd sandcell_d', 13, { language: 'bash' })).matches).toEqual(['sandcell_dir/']);
      expect((await session.complete('cat zzz_none', 12, { language: 'bash' })).matches).toEqual([]);
    });
  });

  it('bash: a completion between cells leaves $? as the last cell left it', async () => {
    await withSession(backend, {}, async (session) => {
      await session.run('false', { language: 'bash' });
      await session.complete('ec', 2, { language: 'bash' });
      expect((await session.run('echo "status $?"', { language: 'bash' })).stdout).toBe('status 1\n');
    });
  });

  it('bash: inspects builtins with their help, functions and variables; an unknown word is not found', async () => {
    await withSession(backend, {}, async (session) => {
      await ran(session, 'sandcell_var_one=1; sandcell_func() { echo hi; }', 'bash');
      const builtin = await session.inspect('cd /tmp', 1, { language: 'bash' });
      expect(builtin.found).toBe(true);
      expect(builtin.data['text/plain']).toContain('cd is a shell builtin');
      expect(builtin.data['text/plain']).toContain('Change the shell working directory');
      expect((await session.inspect('sandcell_func', 3, { language: 'bash' })).data['text/plain']).toContain('echo hi');
      expect((await session.inspect('echo $sandcell_var_one', 8, { language: 'bash' })).data['text/plain']).toContain(
        'sandcell_var_one="1"',
      );
      expect(await session.inspect('no_such_command_here', 3, { language: 'bash' })).toEqual({
        found: false,
        data: {},
        metadata: {},
      });
    });
  });
}

function javascriptAssistCases(backend: SandboxBackend): void {
  it('javascript: completes globals and keywords, and properties along a path, from the live objects', async () => {
    await withSession(backend, {}, async (session) => {
      await ran(session, 'const sandcellRecord = { alpha: 1, beta: 2, nested: { deep: true } };', 'javascript');
      const options = { language: 'javascript' } as const;
      expect(await session.complete('sandcellRe', 10, options)).toMatchObject({
        matches: ['sandcellRecord'],
        cursorStart: 0,
        cursorEnd: 10,
      });
      const code = 'x = "😀" + sandcellRecord.al';
      expect(await session.complete(code, end(code), options)).toMatchObject({
        matches: ['alpha'],
        cursorStart: end(code) - 2,
      });
      expect((await session.complete('sandcellRecord.nested.d', 23, options)).matches).toEqual(['deep']);
      const all = (await session.complete('sandcellRecord.', 15, options)).matches;
      expect(all).toEqual(expect.arrayContaining(['alpha', 'beta', 'nested', 'hasOwnProperty']));
      expect((await session.complete('Math.flo', 8, options)).matches).toEqual(['floor']);
      expect((await session.complete('retu', 4, options)).matches).toContain('return');
    });
  });

  it("javascript: completion never runs the code's getters", async () => {
    await withSession(backend, {}, async (session) => {
      await ran(
        session,
        'const trap = { get boom() { globalThis.sideEffect = 1; return { inner: 1 }; } };',
        'javascript',
      );
      expect((await session.complete('trap.boom.in', 12, { language: 'javascript' })).matches).toEqual([]);
      expect(await session.inspect('trap.boom', 9, { language: 'javascript' })).toMatchObject({ found: false });
      expect((await session.run('console.log(typeof sideEffect)', { language: 'javascript' })).stdout).toBe(
        'undefined\n',
      );
    });
  });

  it('javascript: inspects a function with its source and an object with its fields; an unknown name is not found', async () => {
    await withSession(backend, {}, async (session) => {
      await ran(
        session,
        'function sandcellHelper(a, b) { return a + b; }\nconst settings = { depth: 3 };',
        'javascript',
      );
      const options = { language: 'javascript' } as const;
      const help = await session.inspect('sandcellHelper(1, 2)', 5, options);
      expect(help.found).toBe(true);
      expect(help.data['text/plain']).toContain('return a + b');
      expect((await session.inspect('settings', 8, options)).data['text/plain']).toContain('depth: 3');
      expect(await session.inspect('nothingNamedThis', 3, options)).toEqual({ found: false, data: {}, metadata: {} });
    });
  });

  it('typescript: completes the properties of values declared with types', async () => {
    await withSession(backend, {}, async (session) => {
      await ran(session, 'const typedValue: { count: number } = { count: 1 };', 'typescript');
      expect((await session.complete('typedValue.cou', 14, { language: 'typescript' })).matches).toEqual(['count']);
    });
  });
}

function rAssistCases(backend: SandboxBackend): void {
  it("r: completes names, list elements and arguments with utils' completer", async () => {
    await withSession(backend, {}, async (session) => {
      await ran(session, 'sandcell_value <- 1\nframe <- data.frame(alpha = 1, beta = 2)', 'r');
      const options = { language: 'r' } as const;
      expect(await session.complete('sandcell_va', 11, options)).toMatchObject({
        matches: ['sandcell_value'],
        cursorStart: 0,
        cursorEnd: 11,
      });
      const code = 'x <- "😀"\ny <- frame$al';
      expect(await session.complete(code, end(code), options)).toMatchObject({
        matches: ['frame$alpha'],
        cursorStart: end('x <- "😀"\ny <- '),
      });
      expect((await session.complete('mean(x, na.', 11, options)).matches).toContain('na.rm=');
    });
  });

  it('r: inspects with the help page, or the value of a variable; an unknown name is not found', async () => {
    await withSession(backend, {}, async (session) => {
      await ran(session, 'sandcell_value <- 1.5', 'r');
      const options = { language: 'r' } as const;
      const help = await session.inspect('mean(x)', 2, options);
      expect(help.found).toBe(true);
      expect(help.data['text/plain']).toContain('Arithmetic Mean');
      expect((await session.inspect('sandcell_value', 3, options)).data['text/plain']).toContain('num 1.5');
      expect(await session.inspect('zzz_nothing_named', 3, options)).toEqual({ found: false, data: {}, metadata: {} });
    });
  });
}

function inputCases(backend: SandboxBackend): void {
  it('python: input() and getpass() ask onInput, and the code gets the answers', async () => {
    await withSession(backend, {}, async (session) => {
      const asked: InputRequest[] = [];
      const execution = await session.run(
        'import getpass\nprint("before", flush=True)\nname = input("Name? ")\nsecret = getpass.getpass("Secret: ")\nprint(name.upper(), len(secret))',
        {
          onInput: async (request) => {
            asked.push(request);
            return request.password ? 'hunter2' : 'ada';
          },
        },
      );
      expect(execution.error).toBeUndefined();
      expect(asked).toEqual([
        { prompt: 'Name? ', password: false },
        { prompt: 'Secret: ', password: true },
      ]);
      expect(execution.stdout).toBe('before\nADA 7\n');
    });
  });

  it('python: a refused input raises EOFError in the code; without onInput, input() raises EOFError as ever', async () => {
    await withSession(backend, {}, async (session) => {
      const refused = await session.run('input("? ")', { onInput: () => Promise.reject(new Error('no')) });
      expect(refused.error?.name).toBe('EOFError');
      const unasked = await session.run('input("? ")');
      expect(unasked.error?.name).toBe('EOFError');
      expect((await session.run('print("alive")')).stdout).toBe('alive\n');
    });
  });

  it('python: an input request nobody answers ends at the timeout, and the state is kept', async () => {
    await withSession(backend, { timeoutMs: 3_000 }, async (session) => {
      await ran(session, 'kept = 5', 'python');
      const waiting = await session.run('input("never answered? ")', { onInput: () => new Promise<string>(() => {}) });
      expect(waiting.status).toBe('timeout');
      expect(waiting.stateLost).toBeUndefined();
      expect((await session.run('print(kept)')).stdout).toBe('5\n');
    });
  });

  it('bash and r: reading input without a terminal gives nothing at once, as before', async () => {
    await withSession(backend, {}, async (session) => {
      const bash = await session.run('read -r line; echo "status=$?"', { language: 'bash' });
      expect(bash.stdout).toBe('status=1\n');
      const r = await session.run('line <- readline("? "); cat(nchar(line), "\\n", sep = "")', { language: 'r' });
      expect(r.stdout).toContain('0\n');
    });
  });
}

/** Per language: a cell that defines a name after a second, and statements complete, incomplete and invalid. */
const LANGUAGE_CASES: {
  language: Language;
  slowDefinition: string;
  /** Code that completes to the name the slow cell defines. @default `late_name_m` */
  asking?: string;
  statements: { complete: string; incomplete: string; invalid: string };
}[] = [
  {
    language: 'python',
    slowDefinition: 'import time\ntime.sleep(1)\nlate_name_made = 1',
    statements: { complete: 'x = 1', incomplete: 'for x in y:', invalid: 'x = )' },
  },
  {
    language: 'javascript',
    slowDefinition: 'await new Promise((resolve) => setTimeout(resolve, 1000));\nvar late_name_made = 1;',
    statements: { complete: 'const a = 1', incomplete: 'function f() {', invalid: '1 )' },
  },
  {
    language: 'typescript',
    slowDefinition: 'await new Promise((resolve) => setTimeout(resolve, 1000));\nvar late_name_made: number = 1;',
    statements: { complete: 'let n: number = 1', incomplete: 'interface A {', invalid: 'let n: = 1' },
  },
  {
    language: 'bash',
    slowDefinition: 'sleep 1; late_name_made=1',
    asking: 'echo $late_name_m',
    statements: { complete: 'echo hi', incomplete: 'if true; then', invalid: 'fi' },
  },
  {
    language: 'r',
    slowDefinition: 'Sys.sleep(1)\nlate_name_made <- 1',
    statements: { complete: 'x <- 1', incomplete: 'f <- function() {', invalid: 'x <- )' },
  },
];

function everyLanguageAssistCases(backend: SandboxBackend): void {
  for (const { language, slowDefinition, asking = 'late_name_m', statements } of LANGUAGE_CASES) {
    it(`${language}: a completion asked while code runs is answered after it; is-complete answers`, async () => {
      await withSession(backend, {}, async (session) => {
        const running = session.run(slowDefinition, { language });
        const completion = await session.complete(asking, end(asking), { language });
        expect(completion.matches).toContain('late_name_made');
        expect((await running).error).toBeUndefined();
        for (const [status, code] of Object.entries(statements)) {
          expect((await session.checkComplete(code, { language })).status, code).toBe(status);
        }
      });
    });
  }
}
