import { describe, expect, it } from 'vitest';
import { exportFileName, titleFromCell, titleFromFiles } from './title.js';

describe('conversation titles', () => {
  it('a cell names a conversation only by its leading comment or the data file it reads, never by its code', () => {
    expect(titleFromCell('# Accidents by weather\nimport pandas as pd')).toBe('Accidents by weather');
    expect(titleFromCell('\n  // sum the fines\nconst x = 1')).toBe('sum the fines');
    expect(titleFromCell("import pandas as pd\ndf = pd.read_csv('/mnt/data/traffic_accident.csv')")).toBe(
      'traffic_accident.csv',
    );
    expect(titleFromCell('import pandas as pd\ndf = pd.DataFrame()')).toBeUndefined();
    expect(titleFromCell('#!/bin/bash\necho hi')).toBeUndefined();
    expect(titleFromCell('# 1234\nx = 1')).toBeUndefined();
  });

  it('uploads name it after the files, without their folders', () => {
    expect(titleFromFiles(['traffic_accidents.csv'])).toBe('traffic_accidents.csv');
    expect(titleFromFiles(['raw/a.csv', 'b.json'])).toBe('a.csv, b.json');
    expect(titleFromFiles(['x'.repeat(200)])).toHaveLength(80);
  });
});

describe('export file names', () => {
  it('are the title’s words, lower case, hyphenated, cut at a word to 40 characters', () => {
    expect(exportFileName('What drives the number of accidents?', 'ipynb')).toBe(
      'what-drives-the-number-of-accidents.ipynb',
    );
    expect(exportFileName('import pandas as pd df pd.read_csv mnt data traffic_accident', 'ipynb')).toBe(
      'import-pandas-as-pd-df-pd-read-csv-mnt.ipynb',
    );
    expect(exportFileName('traffic_accidents.csv', 'ipynb')).toBe('traffic-accidents-csv.ipynb');
    expect(exportFileName('Wie hoch sind die Bußgelder?', 'ipynb')).toBe('wie-hoch-sind-die-bußgelder.ipynb');
    expect(exportFileName('"../../etc/passwd"\u0000', 'ipynb')).toBe('etc-passwd.ipynb');
    expect(exportFileName('?!', 'ipynb')).toBe('conversation.ipynb');
    expect(exportFileName('a'.repeat(90), 'ipynb')).toBe(`${'a'.repeat(40)}.ipynb`);
  });
});
