/**
 * The package index as gate rules: what the host's pip answers (its real option parser, with the
 * configuration a test gives it through PIP_* variables) and how each kind of index is turned into
 * rules and the sandbox's pip settings.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { askHostPip, packageIndexOf } from './package-index.js';

const PYPI = { default: 'https://pypi.org/simple', defaultFiles: 'files.pythonhosted.org', noIndex: false };

describe('the package index', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it("asks the host's pip, which reads its configuration and PIP_* variables", () => {
    process.env.PIP_INDEX_URL = 'https://mirror.example:8443/pypi/simple';
    process.env.PIP_EXTRA_INDEX_URL = 'http://10.1.2.3/extra file:///srv/wheels';
    const answer = askHostPip();
    expect(answer.index).toBe('https://mirror.example:8443/pypi/simple');
    expect(answer.extras).toEqual(['http://10.1.2.3/extra', 'file:///srv/wheels']);
    expect(answer.default).toMatch(/^https:\/\//);
    expect(packageIndexOf(answer)).toEqual({
      rules: ['mirror.example:8443', '10.1.2.3'],
      environment: {
        PIP_INDEX_URL: 'https://mirror.example:8443/pypi/simple',
        PIP_EXTRA_INDEX_URL: 'http://10.1.2.3/extra',
      },
      unreachable: ['file:///srv/wheels'],
      pipDefault: { url: answer.default, filesHost: answer.defaultFiles },
    });
  });

  it("pip's default index adds the host it serves files from, and needs no settings in the sandbox", () => {
    expect(packageIndexOf({ ...PYPI, index: PYPI.default, extras: [] })).toEqual({
      rules: ['pypi.org', 'files.pythonhosted.org'],
      environment: {},
      unreachable: [],
      pipDefault: { url: PYPI.default, filesHost: PYPI.defaultFiles },
    });
  });

  it('an index whose name resolves to an address the gate refuses by default is allowed at that address too', () => {
    const answer = {
      ...PYPI,
      index: 'https://mirror.lan:8443/simple',
      extras: [],
      addresses: { 'mirror.lan': ['10.0.0.5', '8.8.8.8', 'fd00::5'], 'files.pythonhosted.org': ['203.0.113.80'] },
    };
    expect(packageIndexOf(answer).rules).toEqual(['mirror.lan:8443', '10.0.0.5:8443', '[fd00::5]:8443']);
    const pypi = packageIndexOf({
      ...answer,
      index: PYPI.default,
      addresses: { 'pypi.org': ['203.0.113.80'], 'files.pythonhosted.org': ['203.0.113.80'] },
    });
    expect(pypi.rules).toEqual(['pypi.org', '203.0.113.80', 'files.pythonhosted.org']);
  });

  it("an index on this machine's loopback is host.sandcell.internal to the sandbox", () => {
    expect(packageIndexOf({ ...PYPI, index: 'http://127.0.0.1:3141/root/pypi/+simple/', extras: [] })).toEqual({
      rules: ['host.sandcell.internal:3141'],
      environment: { PIP_INDEX_URL: 'http://host.sandcell.internal:3141/root/pypi/+simple/' },
      unreachable: [],
      pipDefault: { url: PYPI.default, filesHost: PYPI.defaultFiles },
    });
  });

  it('refuses credentials in the URL, no index at all, and only unreachable indexes, saying why', () => {
    const refusal = (answer: Parameters<typeof packageIndexOf>[0]) => {
      try {
        packageIndexOf(answer);
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidInputError);
        return (error as Error).message;
      }
      throw new Error('not refused');
    };
    const credentials = refusal({ ...PYPI, index: 'https://me:secret@mirror.example/simple', extras: [] });
    expect(credentials).toContain('--secret-header');
    expect(credentials).not.toContain('secret@');
    expect(refusal({ ...PYPI, noIndex: true, index: PYPI.default, extras: [] })).toContain('no-index');
    expect(refusal({ ...PYPI, index: 'file:///srv/simple', extras: [] })).toContain('file:///srv/simple');
  });
});
