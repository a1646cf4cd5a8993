/** The host-side data preview agrees with what pandas, in a real session, makes of the same files. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_BYTES } from '../src/agents/data-preview.js';
import { previewData } from '../src/agents/index.js';
import { createSession, type Session } from '../src/session/session.js';

const root = path.resolve(import.meta.dirname, '..');

const files: Record<string, string> = {
  'mixed.csv': [
    'id,price,flag,label,maybe,empty,quoted',
    '1,2.5,True,a,1,,"x, y"',
    '2,3,False,b,,,"say ""hi"""',
    '3,-1e3,True,"multi',
    'line",NA,,z',
  ].join('\n'),
  'table.tsv': 'a\tb\n1\tx\n2\ty\n',
  'records.json': JSON.stringify([
    { n: 1, f: 1.5, s: 'a', b: true },
    { n: 2, f: 2, s: null, b: false },
  ]),
};

describe('data preview against pandas', () => {
  let session: Session;
  beforeAll(async () => {
    session = await createSession();
  });
  afterAll(() => session?.close());

  async function pandasView(
    name: string,
    reader: string,
  ): Promise<{ dtypes: string[]; rows: number; columns: string[] }> {
    const execution = await session.run(
      `import pandas as pd, json\ndf = ${reader}\nprint(json.dumps({"dtypes": [str(t) for t in df.dtypes], "rows": len(df), "columns": [str(c) for c in df.columns]}))`,
    );
    expect(execution.error, `${name}: ${execution.error?.value}`).toBeUndefined();
    return JSON.parse(execution.stdout);
  }

  it('gives the traffic data the shape, columns and dtypes pandas gives it', async () => {
    const bytes = readFileSync(path.join(root, 'examples', 'traffic-accidents', 'traffic_accidents.csv'));
    await session.files.write('traffic_accidents.csv', bytes);
    const preview = await previewData('traffic_accidents.csv', bytes);
    const pandas = await pandasView('traffic', 'pd.read_csv("traffic_accidents.csv")');
    expect(preview.rowCount).toBe(pandas.rows);
    expect(preview.table?.columns).toEqual(pandas.columns);
    expect(preview.table?.dtypes).toEqual(pandas.dtypes);
  });

  it('counts the rows of a file larger than the sample as pandas does, quoted newlines and blank lines included', async () => {
    const rows = Array.from(
      { length: 40_000 },
      (_, i) =>
        `${i},${i / 4},"line ${i}\nwith ""quotes"", commas",${i % 3 === 0 ? '' : 'x'}${i % 1000 === 0 ? '\n' : ''}`,
    );
    const bytes = Buffer.from(`id,ratio,note,sparse\r\n${rows.join('\r\n')}\r\n`);
    expect(bytes.length).toBeGreaterThan(SAMPLE_BYTES);
    await session.files.write('large.csv', bytes);
    const preview = await previewData('large.csv', bytes);
    const pandas = await pandasView('large', 'pd.read_csv("large.csv")');
    expect(preview.sampledRows).toBeLessThan(pandas.rows);
    expect({ rows: preview.rowCount, columns: preview.table?.columns, dtypes: preview.table?.dtypes }).toEqual(pandas);
  });

  it.each([
    ['mixed.csv', 'pd.read_csv("mixed.csv")'],
    ['table.tsv', 'pd.read_csv("table.tsv", sep="\\t")'],
    ['records.json', 'pd.read_json("records.json")'],
  ])('agrees with pandas on %s', async (name, reader) => {
    const bytes = Buffer.from(files[name]!);
    await session.files.write(name, bytes);
    const preview = await previewData(name, bytes);
    const pandas = await pandasView(name, reader);
    expect({ rows: preview.rowCount, columns: preview.table?.columns, dtypes: preview.table?.dtypes }).toEqual(pandas);
  });
});
