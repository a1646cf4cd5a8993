/**
 * The R kernel on the host, started as the supervisor starts it (an fd 3/4
 * kernel in its own process group): real R, real ggplot2, no sandbox.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FdKernel, type KernelEvent, sandboxLikeEnvironment } from '../../test/support/fd-kernel.js';

const KERNEL = path.join(path.dirname(fileURLToPath(import.meta.url)), 'sandcell_r_kernel.R');
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let home: string;

async function startKernel(options: Record<string, number> = {}): Promise<FdKernel> {
  const kernel = FdKernel.start(['R', '--no-echo', '--no-save', '--no-restore', '-f', KERNEL], {
    env: sandboxLikeEnvironment(home, { SANDCELL_KERNEL_OPTIONS: JSON.stringify(options) }),
    cwd: home,
  });
  await kernel.ready(60_000);
  return kernel;
}

function bundles(events: KernelEvent[], type: 'result' | 'display'): Record<string, string>[] {
  return events.filter((event) => event.type === type).map((event) => event.data as Record<string, string>);
}

function isPng(base64: string | undefined): boolean {
  return Buffer.from(base64 ?? '', 'base64')
    .subarray(0, 8)
    .equals(PNG_SIGNATURE);
}

beforeAll(() => {
  home = mkdtempSync(path.join(os.tmpdir(), 'sandcell-r-kernel-'));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('the R kernel', { timeout: 60_000 }, () => {
  let kernel: FdKernel;
  beforeAll(async () => {
    kernel = await startKernel();
  }, 60_000);
  afterAll(() => kernel.close());

  it('says it is ready with protocol 2, the language, the R version and its pid; ggplot2 is not loaded yet', async () => {
    const ready = await kernel.ready();
    expect(ready).toMatchObject({ protocolVersion: 2, language: 'r', pid: kernel.pid });
    expect(ready.version).toMatch(/^4\.\d+\.\d+$/);
    const run = await kernel.execute('"ggplot2" %in% loadedNamespaces()');
    expect(bundles(run.events, 'result')).toEqual([{ 'text/plain': '[1] FALSE' }]);
    expect(run.end).toMatchObject({ status: 'ok', executionCount: 1, outputTruncated: false });
  });

  it('prints visible values as R does: the last as the result, earlier ones as displays, assignments not at all', async () => {
    const run = await kernel.execute('x <- c(a = 1.5, b = 2)\nx * 2\ny <- "é\\u0001"\ninvisible(3)\nlist(y, TRUE)');
    expect(bundles(run.events, 'display')).toEqual([{ 'text/plain': 'a b \n3 4 ' }]);
    const [result] = run.events.filter((event) => event.type === 'result');
    expect(result?.data).toEqual({ 'text/plain': '[[1]]\n[1] "é\\001"\n\n[[2]]\n[1] TRUE\n' });
    expect(result?.executionCount).toBe(run.end.executionCount);
    expect((await kernel.execute('z <- 1')).events.map((event) => event.type)).toEqual(['execution-end']);
    expect(bundles((await kernel.execute('.Last.value')).events, 'result')).toEqual([{ 'text/plain': '[1] 1' }]);
  });

  it('streams cat, print and child processes to stdout, messages to stderr', async () => {
    const run = await kernel.execute(
      'cat("a", 1, "\\n"); print("b"); message("to stderr"); system("echo from a child")',
    );
    expect(run.stdout).toBe('a 1 \n[1] "b"\nfrom a child\n');
    expect(run.stderr).toBe('to stderr\n');
  });

  it('shows data frames as text and as an HTML table with escaped cells, column types and at most 50 rows', async () => {
    const small = await kernel.execute('data.frame(n = c(1.5, NA), s = c("<b>", "x"))');
    const [bundle] = bundles(small.events, 'result');
    expect(bundle?.['text/plain']).toBe('    n   s\n1 1.5 <b>\n2  NA   x');
    expect(bundle?.['text/html']).toContain('<caption>A data.frame: 2 &times; 2</caption>');
    expect(bundle?.['text/html']).toContain('<th>&lt;dbl&gt;</th><th>&lt;chr&gt;</th>');
    expect(bundle?.['text/html']).toContain('<tr><th>1</th><td>1.5</td><td>&lt;b&gt;</td></tr>');
    const large = bundles((await kernel.execute('data.frame(i = 1:120)')).events, 'result')[0]?.['text/html'] ?? '';
    expect(large).toContain('A data.frame: 120 &times; 1 (the first 50 rows)');
    expect(large.match(/<tr><th>\d+<\/th>/g)?.length).toBe(50);
  });

  it('reports errors as data: the condition class, message and the calls; the rest of the cell does not run', async () => {
    const run = await kernel.execute('f <- function() g()\ng <- function() stop("boom")\nf()\ncat("never\\n")');
    expect(run.error).toMatchObject({
      name: 'simpleError',
      value: 'boom',
      traceback: ['1: f()', '2: g()', '3: stop("boom")'],
    });
    expect(run.end.status).toBe('error');
    expect(run.stdout).toBe('');
    const builtin = await kernel.execute('h <- function(v) log(v)\nh("a")');
    expect(builtin.error?.traceback).toEqual(['1: h("a")', '2: log(v)']);
    const custom = await kernel.execute(
      'stop(structure(class = c("myError", "error", "condition"), list(message = "mine", call = NULL)))',
    );
    expect(custom.error).toMatchObject({ name: 'myError', value: 'mine' });
    const badPrint = await kernel.execute(
      'print.bad <- function(x, ...) stop("cannot print")\nstructure(1, class = "bad")',
    );
    // Only the user's calls: none of the kernel's own frames.
    expect(badPrint.error).toMatchObject({
      name: 'simpleError',
      value: 'cannot print',
      traceback: ['1: print.bad(value)'],
    });
    const after = await kernel.execute('cat("output goes out\\n"); "printing works again"');
    expect(after.stdout).toBe('output goes out\n');
    expect(bundles(after.events, 'result')).toEqual([{ 'text/plain': '[1] "printing works again"' }]);
    const syntax = await kernel.execute('x <- )');
    expect(syntax.error?.value).toContain("unexpected ')'");
  });

  it('prints warnings to stderr as the R console does, after each top-level call', async () => {
    const one = await kernel.execute('sqrt(-1)');
    expect(one.stderr).toBe('Warning message:\nIn sqrt(-1) : NaNs produced\n');
    expect(bundles(one.events, 'result')).toEqual([{ 'text/plain': '[1] NaN' }]);
    const many = await kernel.execute('for (i in 1:12) warning("w")');
    expect(many.stderr).toBe('There were 12 warnings (use warnings() to see them)\n');
    const immediate = await kernel.execute('options(warn = 1); sqrt(-1); options(warn = 0)');
    expect(immediate.stderr).toBe('Warning in sqrt(-1) : NaNs produced\n');
  });

  it('returns base graphics and ggplot2 plots as PNG displays: one per page, a ggplot value drawn', async () => {
    const base = await kernel.execute('plot(1:10)\nabline(h = 5)\nhist(rnorm(50))');
    const pages = bundles(base.events, 'display');
    expect(pages).toHaveLength(2);
    expect(pages.every((page) => isPng(page['image/png']))).toBe(true);
    const chart = await kernel.execute('library(ggplot2)\nggplot(mtcars, aes(wt, mpg)) + geom_point()', 60_000);
    expect(chart.end.status).toBe('ok');
    expect(bundles(chart.events, 'result')).toEqual([]);
    const [image] = bundles(chart.events, 'display');
    expect(isPng(image?.['image/png'])).toBe(true);
    expect(bundles((await kernel.execute('1')).events, 'display')).toEqual([]);
    const sized = await kernel.execute(
      'options(repr.plot.width = 4, repr.plot.height = 3, repr.plot.res = 50)\nplot(1)',
    );
    const png = Buffer.from(bundles(sized.events, 'display')[0]?.['image/png'] ?? '', 'base64');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([200, 150]);
  });

  it('gives code an empty stdin', async () => {
    const run = await kernel.execute('readLines(file("stdin"))');
    expect(bundles(run.events, 'result')).toEqual([{ 'text/plain': 'character(0)' }]);
  });

  it('ends the running code on SIGINT with an Interrupted error and keeps the state; ignores one between cells', async () => {
    await kernel.execute('kept <- "yes"');
    const sleeping = kernel.start('cat("started\\n"); Sys.sleep(60); cat("after\\n")');
    await kernel.waitForStdout('started');
    kernel.interrupt();
    const interrupted = await kernel.finish(sleeping);
    expect(interrupted.error).toMatchObject({ name: 'Interrupted' });
    expect(interrupted.stdout).not.toContain('after');

    const looping = kernel.start('repeat {}');
    await new Promise((resolve) => setTimeout(resolve, 300));
    kernel.interrupt();
    expect((await kernel.finish(looping)).error?.name).toBe('Interrupted');

    for (let round = 0; round < 10; round++) {
      kernel.interrupt();
      const after = await kernel.execute('Sys.sleep(0.01); kept');
      expect(after.end.status).toBe('ok');
      expect(bundles(after.events, 'result')).toEqual([{ 'text/plain': '[1] "yes"' }]);
    }
  });

  it('answers is-complete with parse(): an open construct or string is incomplete, a stray token invalid', async () => {
    const status = async (code: string) => (await kernel.request('is-complete', { code })).status;
    expect(await status('1 + 1')).toBe('complete');
    expect(await status('f <- function(x) {')).toBe('incomplete');
    expect(await status('x <- "open')).toBe('incomplete');
    expect(await status('x <- 1 +')).toBe('incomplete');
    expect(await status('x <- )')).toBe('invalid');
    expect(await kernel.request('no-such-request')).toMatchObject({ ok: false, error: { code: 'unknown-request' } });
  });
});

describe('the R kernel, one per case', { timeout: 60_000 }, () => {
  it('reset clears the global environment and counts executions from 1 again', async () => {
    const kernel = await startKernel();
    try {
      await kernel.execute('gone <- 1; f <- function() 2');
      expect(await kernel.request('reset')).toMatchObject({ ok: true });
      const run = await kernel.execute('ls(all.names = TRUE)');
      expect(bundles(run.events, 'result')).toEqual([{ 'text/plain': 'character(0)' }]);
      expect(run.end.executionCount).toBe(1);
    } finally {
      await kernel.close();
    }
  });

  it('drops results past resultBytes (outputTruncated) and cuts an error value to outputBytes', async () => {
    const kernel = await startKernel({ resultBytes: 4000, outputBytes: 2000 });
    try {
      const big = await kernel.execute('paste(rep("a", 5000), collapse = "")');
      expect(bundles(big.events, 'result')).toEqual([]);
      expect(big.end.outputTruncated).toBe(true);
      const small = await kernel.execute('"fits"');
      expect(bundles(small.events, 'result')).toEqual([{ 'text/plain': '[1] "fits"' }]);
      expect(small.end.outputTruncated).toBe(false);
      const error = await kernel.execute('stop(strrep("e", 10000))');
      expect(Buffer.byteLength(String(error.error?.value))).toBeLessThanOrEqual(2000);
      expect(error.error?.value).toContain('[sandcell cut this error value');
    } finally {
      await kernel.close();
    }
  });

  it('exits when its requests close', async () => {
    const kernel = await startKernel();
    kernel.closeRequests();
    expect(await kernel.exited).toMatchObject({ code: 0 });
    await kernel.close();
  });
});

describe('the R kernel’s state, saved by one kernel and loaded by a fresh one', { timeout: 60_000 }, () => {
  let directory: string;
  const kernels: FdKernel[] = [];
  beforeAll(() => {
    directory = mkdtempSync(path.join(home, 'states-'));
  });
  afterAll(async () => {
    await Promise.all(kernels.map((kernel) => kernel.close()));
  });
  async function fresh(): Promise<FdKernel> {
    const kernel = await startKernel();
    kernels.push(kernel);
    return kernel;
  }
  /** What `code` prints, as the JSON it writes with jsonlite. */
  async function printedJson(kernel: FdKernel, code: string): Promise<unknown> {
    const run = await kernel.execute(`cat(jsonlite::toJSON(${code}, auto_unbox = TRUE))`);
    expect(run.end.status).toBe('ok');
    return JSON.parse(run.stdout);
  }

  // Each value as it is made, and made again in the loading kernel to compare with identical().
  const VALUES: Record<string, string> = {
    numbers: 'c(1.5, NA, -Inf, 1e300)',
    text: '"héllo \\"quoted\\" \'single\' ✓ 漢字"',
    frame: 'data.frame(a = 1:3, b = c("x", "y", "z"), stringsAsFactors = FALSE)',
    items: 'list(1, "two", list(three = 3L), NULL)',
    add_base: 'function(v) v + base',
    levels_kept: 'factor(c("lo", "hi", "lo"), levels = c("lo", "hi"))',
  };

  it('brings back values, a closure over a global, shared environments, attached packages, the directory and the count', async () => {
    const saving = await fresh();
    const work = path.join(directory, 'work');
    const made = Object.entries(VALUES).map(([name, value]) => `${name} <- ${value}`);
    expect(
      (await saving.execute(`${made.join('\n')}\nbase <- 10\nshared <- new.env()\nalias <- shared`)).end.status,
    ).toBe('ok');
    expect((await saving.execute('library(stats4)')).end.status).toBe('ok');
    const moved = await saving.execute(`dir.create(${JSON.stringify(work)})\nsetwd(${JSON.stringify(work)})`);
    expect(moved.end).toMatchObject({ status: 'ok', executionCount: 3 });

    const file = path.join(directory, 'whole.state');
    const saved = await saving.request('state-save', { path: file });
    const names = [...Object.keys(VALUES), 'alias', 'base', 'shared'].sort();
    expect(saved).toMatchObject({ ok: true, skipped: [], executionCount: 3 });
    expect([...(saved.saved as string[])].sort()).toEqual(['package:stats4', ...names].sort());
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file).subarray(0, 19).toString()).toBe('sandcell-r-state 1\n');

    const loading = await fresh();
    expect(await printedJson(loading, '"package:stats4" %in% search()')).toBe(false);
    const loaded = await loading.request('state-load', { path: file });
    expect(loaded).toMatchObject({ ok: true, skipped: [], executionCount: 3 });
    expect([...(loaded.restored as string[])].sort()).toEqual(['package:stats4', ...names].sort());

    const checks = Object.entries(VALUES).map(([name, value]) => `${name} = identical(${name}, ${value})`);
    const run = await loading.execute(
      `cat(jsonlite::toJSON(list(${checks.join(', ')}, shared = identical(shared, alias), closure = add_base(1), ` +
        `stats4 = "package:stats4" %in% search(), mle = exists("mle"), directory = getwd()), auto_unbox = TRUE))`,
    );
    expect(JSON.parse(run.stdout)).toEqual({
      ...Object.fromEntries(Object.keys(VALUES).map((name) => [name, true])),
      shared: true,
      closure: 11,
      stats4: true,
      mle: true,
      directory: realpathSync(work),
    });
    expect(run.end.executionCount).toBe(4);
    // The closure sees the global as it is now in this kernel.
    expect(await printedJson(loading, '{ base <- 20; add_base(1) }')).toBe(21);
  });

  it('leaves out connections, external pointers and what cannot be serialized, with the reason, and keeps the rest', async () => {
    const saving = await fresh();
    const gone = path.join(directory, 'gone');
    const made = await saving.execute(
      'con <- file(tempfile(), "w")\nkept <- 42\npointer <- new("externalptr")\n' +
        // Too deep for serialize's recursion: the whole list fails, this name alone is left out.
        'deep <- list()\nfor (i in 1:500000) deep <- list(deep)\n' +
        `dir.create(${JSON.stringify(gone)})\nsetwd(${JSON.stringify(gone)})`,
    );
    expect(made.end.status).toBe('ok');
    const file = path.join(directory, 'partial.state');
    const skipped = [
      { name: 'con', reason: 'connection' },
      { name: 'pointer', reason: 'external pointer' },
      { name: 'deep', reason: expect.stringContaining('C stack') },
    ];
    expect(await saving.request('state-save', { path: file })).toMatchObject({
      ok: true,
      saved: ['i', 'kept'],
      skipped,
      executionCount: 1,
    });
    rmSync(gone, { recursive: true });
    const loading = await fresh();
    expect(await loading.request('state-load', { path: file })).toMatchObject({
      ok: true,
      restored: ['i', 'kept'],
      skipped: [...skipped, { name: '(working directory)', reason: `${gone}: no such directory` }],
    });
    expect(await printedJson(loading, 'list(kept = kept, names = ls(), directory = getwd())')).toEqual({
      kept: 42,
      names: ['i', 'kept'],
      directory: realpathSync(home),
    });
  });

  it('refuses a file that is not an R state before unserializing anything, a missing file and a request without a path, changing nothing', async () => {
    const kernel = await fresh();
    await kernel.execute('x <- "mine"');
    // R serializations that would load the stats4 namespace if they were read: an RDS file, and a
    // state of another version (a header of the same length, so only the magic check refuses it).
    const rds = path.join(directory, 'value.rds');
    const version = path.join(directory, 'version.state');
    execFileSync('Rscript', [
      '-e',
      `saveRDS(stats4::mle, ${JSON.stringify(rds)}, compress = FALSE)
       out <- file(${JSON.stringify(version)}, "wb"); writeBin(charToRaw("sandcell-r-state 9\\n"), out)
       serialize(stats4::mle, out); close(out)`,
    ]);
    const python = path.join(directory, 'python.state');
    writeFileSync(python, 'sandcell-python-state 1\n2\n{}');
    const damaged = path.join(directory, 'damaged.state');
    writeFileSync(damaged, 'sandcell-r-state 1\nnot a serialization');
    for (const file of [rds, version, python, damaged]) {
      expect(await kernel.request('state-load', { path: file })).toMatchObject({
        ok: false,
        error: { code: 'state-invalid' },
      });
    }
    expect(await kernel.request('state-load', { path: path.join(directory, 'missing.state') })).toMatchObject({
      ok: false,
      error: { code: 'state-failed' },
    });
    expect(
      await kernel.request('state-save', { path: path.join(directory, 'no-such-directory', 'x.state') }),
    ).toMatchObject({
      ok: false,
      error: { code: 'state-failed' },
    });
    for (const fields of [{}, { path: 7 }, { path: 'relative.state' }]) {
      expect(await kernel.request('state-load', fields)).toMatchObject({
        ok: false,
        error: { code: 'invalid-request' },
      });
      expect(await kernel.request('state-save', fields)).toMatchObject({
        ok: false,
        error: { code: 'invalid-request' },
      });
    }
    const run = await kernel.execute('cat(ls(), x, getwd(), "stats4" %in% loadedNamespaces())');
    expect(run.stdout).toBe(`x mine ${realpathSync(home)} FALSE`);
    expect(run.end.executionCount).toBe(2);
  });

  it('saves after the running execution ends', async () => {
    const saving = await fresh();
    const file = path.join(directory, 'waited.state');
    const running = saving.start('Sys.sleep(1); x <- "after"');
    const saved = await saving.request('state-save', { path: file });
    expect(saved).toMatchObject({ ok: true, saved: ['x'], executionCount: 1 });
    const end = saving.events.findIndex((event) => event.type === 'execution-end' && event.id === running);
    expect(end).toBeGreaterThanOrEqual(0);
    expect(end).toBeLessThan(saving.events.indexOf(saved));
    const loading = await fresh();
    expect(await loading.request('state-load', { path: file })).toMatchObject({ ok: true, restored: ['x'] });
    expect(await printedJson(loading, 'x')).toBe('after');
  });
});
