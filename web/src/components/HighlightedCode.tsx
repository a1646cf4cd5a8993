/** Code, highlighted; a shell command shown as typed at a prompt. */
import { useMemo } from 'preact/hooks';
import type { CodeStep } from '../../../src/protocol/index';
import { highlightCode } from '../render/highlight';

export function HighlightedCode({ code, language }: { code: string; language?: CodeStep['language'] }) {
  const html = useMemo(() => highlightCode(code, language), [code, language]);
  // A shell command reads as typed at a prompt.
  return (
    <pre class={`code-block hljs${language === 'shell' ? ' shell-command' : ''}`}>
      {language === 'shell' ? (
        <span class="shell-prompt" aria-hidden="true">
          ${' '}
        </span>
      ) : null}
      <code class={`language-${language ?? 'python'}`} dangerouslySetInnerHTML={{ __html: html }} />
    </pre>
  );
}
