/** Python syntax highlighting with highlight.js core and only its Python grammar (small); other languages show as plain text. */
import hljs from 'highlight.js/lib/core';
import python from 'highlight.js/lib/languages/python';

hljs.registerLanguage('python', python);

/** HTML of `code` highlighted as Python; the code is escaped by highlight.js. */
export function highlightPython(code: string): string {
  return hljs.highlight(code, { language: 'python', ignoreIllegals: true }).value;
}

export function escapeHtml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** HTML of `code` in `language`: highlighted for Python (also when the language is not given), escaped plain text otherwise. */
export function highlightCode(code: string, language: string | undefined): string {
  return language === undefined || language === 'python' ? highlightPython(code) : escapeHtml(code);
}

export function highlightLanguage(code: string, language: string): string | undefined {
  const name = language.toLowerCase();
  if (name === 'python' || name === 'py' || name === 'python3' || name === 'ipython') return highlightPython(code);
  return undefined;
}
