import { describe, expect, it } from 'vitest';
import { buildsLine, contentsLine, environmentContents } from './contents.js';
import { parseDescription } from './description.js';

const full = parseDescription({
  name: 'ml',
  debianPackages: ['python3-toolz'],
  python: { wheels: ['dist/tiny-1.0-py3-none-any.whl'], requirements: 'deps/requirements.txt', packages: ['rich'] },
  files: [{ source: 'data.csv', target: '/usr/share/ml/data.csv' }],
});

describe('what an environment adds, as it is listed', () => {
  it('names packages, wheels, the requirements file and the files it copies in', () => {
    expect(environmentContents(full)).toEqual({
      debianPackages: ['python3-toolz'],
      pythonPackages: ['tiny-1.0-py3-none-any.whl', '-r requirements.txt', 'rich'],
      files: ['/usr/share/ml/data.csv'],
    });
    expect(contentsLine(full)).toBe(
      'adds: python3-toolz tiny-1.0-py3-none-any.whl -r requirements.txt rich; files: /usr/share/ml/data.csv',
    );
  });

  it('says nothing for a description that adds nothing, and only files when it adds only files', () => {
    expect(contentsLine(parseDescription({ name: 'empty' }))).toBeUndefined();
    const filesOnly = parseDescription({ name: 'f', files: [{ source: 'a', target: '/usr/share/f/a' }] });
    expect(contentsLine(filesOnly)).toBe('files: /usr/share/f/a');
  });

  it('gives each backend its size in MiB', () => {
    expect(buildsLine({ bubblewrap: { sizeBytes: 3 * 2 ** 20 }, docker: {} })).toBe('bubblewrap 3 MiB, docker');
  });
});
