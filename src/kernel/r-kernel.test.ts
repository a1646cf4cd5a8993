/**
 * The R kernel on the host, started as the supervisor starts it (an fd 3/4
 * kernel in its own process group): real R, real ggplot2, no sandbox.
 */
import { mkdtempSync, rmSync } from 'node:fs';
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
