/** Untrusted HTML and markdown, sanitised before it reaches the DOM. */
import { useMemo } from 'preact/hooks';
import { renderMarkdown, sanitizeHtml } from '../render/sanitize';

export function SafeHtml({ html, className }: { html: string; className?: string }) {
  const clean = useMemo(() => sanitizeHtml(html), [html]);
  return <div class={className ?? 'html-output'} dangerouslySetInnerHTML={{ __html: clean }} />;
}

export function Markdown({ text }: { text: string }) {
  const clean = useMemo(() => renderMarkdown(text), [text]);
  return <div class="markdown" dangerouslySetInnerHTML={{ __html: clean }} />;
}
