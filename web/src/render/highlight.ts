/** Python syntax highlighting with highlight.js core and only its Python grammar (small). */
import hljs from 'highlight.js/lib/core';
import python from 'highlight.js/lib/languages/python';

hljs.registerLanguage('python', python);

/** HTML of `code` highlighted as Python; the code is escaped by highlight.js. */
export function highlightPython(code: string): string {
  return hljs.highlight(code, { language: 'python', ignoreIllegals: true }).value;
}

export function highlightLanguage(code: string, language: string): string | undefined {
  const name = language.toLowerCase();
  if (name === 'python' || name === 'py' || name === 'python3' || name === 'ipython') return highlightPython(code);
  return undefined;
}
