import { describe, expect, it } from 'vitest';
import { execErrorText, execSuggestion } from './exec-usage.js';

describe("exec's unknown option", () => {
  it('suggests the command after --, keeping exec options before it', () => {
    expect(execSuggestion(['ls', '-la'], ['ls', '-la'], '-la')).toBe('sandcell exec -- ls -la');
    expect(execSuggestion(['--upload', 'ls', 'ls', '-la', '/mnt/data'], ['ls', '-la', '/mnt/data'], '-la')).toBe(
      'sandcell exec --upload ls -- ls -la /mnt/data',
    );
    expect(execSuggestion(['grep', '-n', "it's", 'f'], ['grep', '-n', "it's", 'f'], '-n')).toBe(
      `sandcell exec -- grep -n 'it'\\''s' f`,
    );
  });

  it("leaves commander's message alone for a mistyped exec option before the command", () => {
    expect(execSuggestion(['--tiemout', '5', '--', 'ls'], ['--tiemout', '5', 'ls'], '--tiemout')).toBeUndefined();
    const text = "error: unknown option '--tiemout'\n";
    expect(execErrorText(text, ['exec', '--tiemout', '5', '--', 'ls'], ['--tiemout'])).toBe(text);
  });

  it("adds the suggestion to commander's error", () => {
    expect(execErrorText("error: unknown option '-la'\n", ['exec', 'ls', '-la'], ['ls', '-la'])).toBe(
      "error: unknown option '-la'\nThe command's own options go after --: sandcell exec -- ls -la\n",
    );
  });
});
