import { describe, expect, it } from 'vitest';
import { previewData } from './data-preview.js';
import { countDelimitedRecords, countLines, countNonBlankLines, scanJsonArray } from './data-scan.js';
import { inferDtype, parseDelimited } from './data-table.js';

describe('data preview', () => {
  it('parses RFC 4180 CSV: quotes, escaped quotes, newlines in fields, CRLF, a BOM, blank lines', async () => {
    const text = '\uFEFFname,note\r\n"Smith, J","said ""hi"""\r\n\r\nLee,"two\nlines"\n';
    expect(parseDelimited(text, ',')).toEqual([
      ['name', 'note'],
      ['Smith, J', 'said "hi"'],
      ['Lee', 'two\nlines'],
    ]);
  });

  it('infers dtypes as pandas does by default', async () => {
    expect(inferDtype(['1', '2', '-3'])).toBe('int64');
    expect(inferDtype(['1', '', '3'])).toBe('float64');
    expect(inferDtype(['1', 'NA', '3'])).toBe('float64');
    expect(inferDtype(['1.5', '2', '1e3'])).toBe('float64');
    expect(inferDtype(['True', 'False'])).toBe('bool');
    expect(inferDtype(['True', ''])).toBe('object');
    expect(inferDtype(['a', '1'])).toBe('object');
    expect(inferDtype(['', ''])).toBe('float64');
  });

  it('gives columns, dtypes, row count and the first 15 rows of a CSV', async () => {
    const rows = Array.from({ length: 40 }, (_, i) => `${i},${i / 2},city ${i}`);
    const preview = await previewData('t.csv', Buffer.from(`id,half,city\n${rows.join('\n')}\n`));
    expect(preview.rowCount).toBe(40);
    expect(preview.table?.dtypes).toEqual(['int64', 'float64', 'object']);
    expect(preview.text).toContain('Shape: 40 rows × 3 columns.');
    expect(preview.text).toContain('First 15 rows:');
    expect(preview.text).toContain('city 14');
    expect(preview.text).not.toContain('city 15');
  });

  it('reads JSON records, JSON columns and JSON lines', async () => {
    const records = await previewData('r.json', Buffer.from('[{"a": 1, "b": "x"}, {"a": 2, "b": null, "c": true}]'));
    expect(records.table?.columns).toEqual(['a', 'b', 'c']);
    expect(records.table?.dtypes).toEqual(['int64', 'object', 'object']);
    const columns = await previewData('c.json', Buffer.from('{"a": {"0": 1.5, "1": 2}, "b": {"0": "x", "1": "y"}}'));
    expect(columns.rowCount).toBe(2);
    expect(columns.table?.dtypes).toEqual(['float64', 'object']);
    const lines = await previewData('l.jsonl', Buffer.from('{"a": 1}\n{"a": 2}\n'));
    expect(lines.rowCount).toBe(2);
  });

  it('describes other files by size and first lines or bytes', async () => {
    expect((await previewData('notes.txt', Buffer.from('hello\nworld\n'))).text).toContain(
      'Text, 3 lines. First lines:\nhello',
    );
    const binary = await previewData('blob.bin', Buffer.from([0, 1, 2, 255]));
    expect(binary.format).toBe('binary');
    expect(binary.text).toContain('00 01 02 ff');
    expect((await previewData('bad.json', Buffer.from('{oops'))).text).toContain('could not be read as JSON');
  });

  it('counts records as the parser splits them, whatever the chunk boundaries', async () => {
    const samples = [
      '\uFEFFname,note\r\n"Smith, J","said ""hi"""\r\n\r\nLee,"two\nlines"\n',
      'a,b\n"",\n""\n"x""y",z\r\rq',
      'a\n"unterminated,\nstill "" in it',
      '"a"b"c,d\n,\n\n"',
      'x,"\r\n",y\r\n',
      '',
    ];
    for (const text of samples) {
      const bytes = Buffer.from(text);
      for (const chunk of [1, 2, 3, 7, 1 << 20]) {
        expect(await countDelimitedRecords(bytes, ',', chunk), `${JSON.stringify(text)} / ${chunk}`).toBe(
          parseDelimited(text, ',').length,
        );
      }
    }
    expect(await countNonBlankLines(Buffer.from('{"a":1}\n \n{"a":2}\r\n{"a":3}'), 3)).toBe(3);
    expect(await countLines(Buffer.from('a\r\nb\n\nc'), 2)).toBe(4);
  });

  it('counts the records of a top-level JSON array and parses those within the sample', async () => {
    const text = '[{"a": "x,]}{[\\"", "b": [1, {"c": 2}]}, {"a": "y"}, 3, null, "s"]';
    for (const chunk of [1, 5, 1 << 20]) {
      const scan = await scanJsonArray(Buffer.from(text), 45, chunk);
      expect(scan).toEqual({ count: 5, sample: [{ a: 'x,]}{["', b: [1, { c: 2 }] }] });
    }
    expect(await scanJsonArray(Buffer.from('[]'), 10)).toEqual({ count: 0, sample: [] });
    for (const broken of ['{"a": [1]}', '[1,]', '[1', '[1] [2]', '[1, {oops}]']) {
      expect(await scanJsonArray(Buffer.from(broken), 100), broken).toBeUndefined();
    }
  });

  it('past the sample, judges columns and dtypes from the first rows and says so; counts every row', async () => {
    const rows = Array.from(
      { length: 5000 },
      (_, i) => `${i},"note ${i}, with a comma\nand a newline",${i % 2 ? 'x' : 1}`,
    );
    const bytes = Buffer.from(`id,note,mixed\n${rows.join('\n')}\n9999,last,z\n`);
    const preview = await previewData('big.csv', bytes, { sampleBytes: 4096, chunkBytes: 1000 });
    expect(preview.rowCount).toBe(5001);
    expect(preview.sampledRows).toBeGreaterThan(15);
    expect(preview.sampledRows).toBeLessThan(200);
    expect(preview.table?.rows.length).toBe(preview.sampledRows);
    expect(preview.table?.dtypes).toEqual(['int64', 'object', 'object']);
    expect(preview.text).toContain('Shape: 5001 rows × 3 columns (rows counted in the whole file).');
    expect(preview.text).toContain(`judged from the first ${preview.sampledRows} rows only`);
    const small = await previewData('small.csv', Buffer.from('a\n1\n'), { sampleBytes: 4096 });
    expect(small.sampledRows).toBeUndefined();
    expect(small.text).toContain('Columns and dtypes (as pandas reads them by default):');

    const records = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ n: i, s: `v${i}` }));
    const json = await previewData('big.json', Buffer.from(`[${records.join(',\n')}]`), { sampleBytes: 2048 });
    expect(json.rowCount).toBe(3000);
    expect(json.table?.dtypes).toEqual(['int64', 'object']);
    expect(json.text).toContain('Shape: 3000 records × 2 columns (records counted in the whole file).');
    const lines = await previewData('big.jsonl', Buffer.from(`${records.join('\n')}\n`), { sampleBytes: 2048 });
    expect(lines.rowCount).toBe(3000);
    expect(lines.table?.columns).toEqual(['n', 's']);
    const columns = await previewData('columns.json', Buffer.from(`{"a": {${'"0": 1,'.repeat(500)} "1": 2}}`), {
      sampleBytes: 1024,
    });
    expect(columns.format).toBe('text');
    expect(columns.text).toContain('could not be read as JSON (as an array of records)');
  });
});
