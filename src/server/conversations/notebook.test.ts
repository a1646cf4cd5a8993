import { describe, expect, it } from 'vitest';
import { type CodeFile, type CodeStep, MAX_SAVED_IMAGE_BYTES, type Turn } from '../../protocol/index.js';
import { conversationNotebook, MAX_EXPORTED_SAVED_IMAGE_BYTES, type NotebookSource } from './notebook.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const png = (size = 64) => Buffer.concat([PNG_SIGNATURE, Buffer.alloc(size - PNG_SIGNATURE.length, 7)]);

type Output = { output_type: string; data?: Record<string, unknown>; text?: string[] | string };

function file(path: string, size: number, kind: CodeFile['kind'] = 'file'): CodeFile {
  return { path, size, kind, url: `/v1/sessions/s/files/${path}` };
}

function cellTurn(code: string, files: CodeFile[], stdout = ''): Turn {
  const step: CodeStep = {
    type: 'code',
    callId: 't1',
    code,
    attempt: 1,
    maxAttempts: 1,
    status: 'ok',
    stdout,
    stderr: '',
    results: [],
    files,
    execution: { status: 'ok', executionCount: 1, durationMs: 5 },
  };
  return { id: 't1', kind: 'cell', createdAt: new Date(0).toISOString(), status: 'done', input: code, steps: [step] };
}

async function outputsOf(turn: Turn, readFile?: NotebookSource['readFile']): Promise<Output[]> {
  const notebook = (await conversationNotebook({
    id: 'c',
    title: 'Saved charts',
    turns: [turn],
    image: () => undefined,
    ...(readFile ? { readFile } : {}),
  })) as { cells: { cell_type: string; outputs?: Output[] }[] };
  return notebook.cells.find((cell) => cell.cell_type === 'code')?.outputs ?? [];
}

const text = (value: unknown) => [value].flat().join('');

describe('the notebook export of images the code saved', () => {
  it('embeds them on the cell that saved them, after its printed output, and lists the files it wrote', async () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>';
    const contents: Record<string, Buffer> = { 'chart.png': png(), 'plots/shape.svg': Buffer.from(svg) };
    const turn = cellTurn(
      "plt.savefig('/mnt/data/chart.png'); plt.close()",
      [
        file('chart.png', 64),
        file('plots/shape.svg', svg.length),
        file('huge.png', MAX_SAVED_IMAGE_BYTES + 1024 * 1024),
        file('out.csv', 12),
        file('figure-1.png', 300, 'figure'),
      ],
      'saved\n',
    );
    const outputs = await outputsOf(turn, async (path) => contents[path] ?? Buffer.alloc(0));
    expect(outputs.map((output) => output.output_type)).toEqual([
      'stream',
      'display_data',
      'display_data',
      'display_data',
    ]);
    expect(text(outputs[0]?.text)).toBe('saved\n');
    expect(outputs[1]?.data?.['image/png']).toBe(png().toString('base64'));
    expect(String(outputs[1]?.data?.['image/png'])).toMatch(/^iVBOR/);
    expect(text(outputs[2]?.data?.['image/svg+xml'])).toBe(svg);
    // The huge one is not read, and the list says why it is not in the notebook.
    const listed = text(outputs[3]?.data?.['text/markdown']);
    expect(listed).toContain('`huge.png` (9 MiB, not embedded: over 8 MiB)');
    expect(listed).toContain('`out.csv` (12 B)');
    expect(listed).toContain('`figure-1.png` (300 B, figure)');
    expect(text(outputs[3]?.data?.['text/plain'])).toContain('out.csv (12 B)');
  });

  it('says so where an image could not be embedded: the session gone, a read failing, the budget spent', async () => {
    const gone = await outputsOf(cellTurn('x', [file('chart.png', 64)]));
    expect(text(gone[0]?.data?.['text/plain'])).toBe(
      '[/mnt/data/chart.png: the session that saved this image has ended, and the image with it]',
    );

    const failing = await outputsOf(cellTurn('x', [file('chart.png', 64)]), async () => {
      throw new Error('chart.png is not a regular file');
    });
    expect(text(failing[0]?.data?.['text/plain'])).toContain('could not be read for this export');

    // Each image as large as may be shown: the export holds as many as its budget allows, then says why not more.
    expect(MAX_EXPORTED_SAVED_IMAGE_BYTES / MAX_SAVED_IMAGE_BYTES).toBe(4);
    const large = Buffer.alloc(MAX_SAVED_IMAGE_BYTES, 1);
    let reads = 0;
    const names = ['a.png', 'b.png', 'c.png', 'd.png', 'e.png'];
    const outputs = await outputsOf(
      cellTurn(
        'x',
        names.map((name) => file(name, large.length)),
      ),
      async () => {
        reads++;
        return large;
      },
    );
    expect(outputs.filter((output) => output.data?.['image/png'] !== undefined)).toHaveLength(4);
    expect(reads).toBe(4); // the one past the budget is not even read
    expect(text(outputs[4]?.data?.['text/plain'])).toBe(
      '[/mnt/data/e.png: not embedded: this export already holds 32 MiB of saved images]',
    );
  });
});
