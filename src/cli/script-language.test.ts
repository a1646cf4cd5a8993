import { describe, expect, it } from 'vitest';
import { scriptLanguage } from './script-language.js';

describe("a script's language", () => {
  it('comes from --language, else the extension; Python for standard input and no extension', () => {
    expect(scriptLanguage('a.js', undefined)).toBe('javascript');
    expect(scriptLanguage('a.R', undefined)).toBe('r');
    expect(scriptLanguage('-', undefined)).toBe('python');
    expect(scriptLanguage('script', undefined)).toBe('python');
    expect(scriptLanguage('a.rb', 'bash')).toBe('bash');
  });

  it('refuses an extension it does not know, naming --language, rather than running it as Python', () => {
    expect(() => scriptLanguage('hello.rb', undefined)).toThrow(
      'Cannot run hello.rb: unknown extension .rb; pass --language python|javascript|typescript|bash|r to say which language it is.',
    );
  });
});
