import { describe, expect, it } from 'vitest';
import { inferDtype, parseDelimited, previewData } from './data-preview.js';

describe('data preview', () => {
  it('parses RFC 4180 CSV: quotes, escaped quotes, newlines in fields, CRLF, a BOM, blank lines', () => {
    const text = '\uFEFFname,note\r\n"Smith, J","said ""hi"""\r\n\r\nLee,"two\nlines"\n';
    expect(parseDelimited(text, ',')).toEqual([
      ['name', 'note'],
      ['Smith, J', 'said "hi"'],
      ['Lee', 'two\nlines'],
    ]);
  });

  it('infers dtypes as pandas does by default', () => {
    expect(inferDtype(['1', '2', '-3'])).toBe('int64');
    expect(inferDtype(['1', '', '3'])).toBe('float64');
    expect(inferDtype(['1', 'NA', '3'])).toBe('float64');
    expect(inferDtype(['1.5', '2', '1e3'])).toBe('float64');
    expect(inferDtype(['True', 'False'])).toBe('bool');
    expect(inferDtype(['True', ''])).toBe('object');
    expect(inferDtype(['a', '1'])).toBe('object');
    expect(inferDtype(['', ''])).toBe('float64');
  });

  it('gives columns, dtypes, row count and the first 15 rows of a CSV', () => {
    const rows = Array.from({ length: 40 }, (_, i) => `${i},${i / 2},city ${i}`);
    const preview = previewData('t.csv', Buffer.from(`id,half,city\n${rows.join('\n')}\n`));
    expect(preview.rowCount).toBe(40);
    expect(preview.table?.dtypes).toEqual(['int64', 'float64', 'object']);
    expect(preview.text).toContain('Shape: 40 rows × 3 columns.');
    expect(preview.text).toContain('First 15 rows:');
    expect(preview.text).toContain('city 14');
    expect(preview.text).not.toContain('city 15');
  });

  it('reads JSON records, JSON columns and JSON lines', () => {
    const records = previewData('r.json', Buffer.from('[{"a": 1, "b": "x"}, {"a": 2, "b": null, "c": true}]'));
    expect(records.table?.columns).toEqual(['a', 'b', 'c']);
    expect(records.table?.dtypes).toEqual(['int64', 'object', 'object']);
    const columns = previewData('c.json', Buffer.from('{"a": {"0": 1.5, "1": 2}, "b": {"0": "x", "1": "y"}}'));
    expect(columns.rowCount).toBe(2);
    expect(columns.table?.dtypes).toEqual(['float64', 'object']);
    const lines = previewData('l.jsonl', Buffer.from('{"a": 1}\n{"a": 2}\n'));
    expect(lines.rowCount).toBe(2);
  });

  it('describes other files by size and first lines or bytes', () => {
    expect(previewData('notes.txt', Buffer.from('hello\nworld\n')).text).toContain(
      'Text, 3 lines. First lines:\nhello',
    );
    const binary = previewData('blob.bin', Buffer.from([0, 1, 2, 255]));
    expect(binary.format).toBe('binary');
    expect(binary.text).toContain('00 01 02 ff');
    expect(previewData('bad.json', Buffer.from('{oops')).text).toContain('could not be read as JSON');
  });
});
