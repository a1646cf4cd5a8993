/**
 * Untrusted HTML (DataFrames and display(HTML(...)) from sandboxed code, the
 * model's markdown) made safe to put in the page: DOMPurify removes scripts,
 * event handlers, styles, forms and frames; links open in a new tab without
 * access to this page; images may only be inline data (no requests made on the
 * user's behalf). The page's CSP is the second wall.
 */
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { highlightLanguage } from './highlight';

const FORBID_TAGS = [
  'style',
  'script',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'form',
  'input',
  'button',
  'textarea',
  'select',
  'option',
  'link',
  'meta',
  'base',
  'template',
  'dialog',
  'audio',
  'video',
  'source',
  'track',
  'math',
];
const FORBID_ATTR = ['style', 'srcset', 'action', 'formaction', 'autofocus', 'tabindex', 'id', 'name'];

let hooked = false;

function installHooks(): void {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node instanceof Element) {
      if (node.tagName === 'A') {
        const href = node.getAttribute('href') ?? '';
        if (/^https?:/i.test(href)) {
          node.setAttribute('target', '_blank');
          node.setAttribute('rel', 'noopener noreferrer');
        } else if (!href.startsWith('#')) {
          node.removeAttribute('href');
        }
      }
      for (const attribute of ['src', 'xlink:href', 'href', 'poster', 'background']) {
        if (attribute === 'href' && node.tagName === 'A') continue;
        const value = node.getAttribute(attribute);
        if (value !== null && !/^data:image\/(png|jpe?g|gif|webp);/i.test(value)) node.removeAttribute(attribute);
      }
    }
  });
}

// A start tag, with quoted attribute values that may hold `>`.
const START_TAG = /<[a-zA-Z][^\s/>]*(?:\s+[^\s/>=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+))?)*\s*\/?>/g;
const HANDLER_OR_STYLE = /\s(?:on[a-zA-Z]+|style)\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+)/g;
// A <style> element, up to its end tag or, unclosed, to the end of the input (where an
// HTML parser would end it too); under <math> or <svg> it would otherwise re-parse as markup.
const STYLE_ELEMENT = /<style\b[^>]*>(?:[\s\S]*?<\/style\s*>|[\s\S]*$)/gi;
const BASE_TAG = /<base\b[^>]*>/gi;

/**
 * Drops <style> elements, <base> tags and inline handler/style attributes
 * before the HTML is parsed at all: parsing them, even in DOMPurify's inert
 * document, makes the browser report a (blocked) CSP violation — pandas puts a
 * <style> in every DataFrame; a <base href> sets the parsing document's base
 * URI. Only noise reduction: DOMPurify below is what makes HTML safe.
 */
function withoutInlineCode(html: string): string {
  return html
    .replace(STYLE_ELEMENT, '')
    .replace(BASE_TAG, '')
    .replace(START_TAG, (tag) => tag.replace(HANDLER_OR_STYLE, ''));
}

export function sanitizeHtml(html: string): string {
  installHooks();
  return DOMPurify.sanitize(withoutInlineCode(html), {
    FORBID_TAGS,
    FORBID_ATTR,
    ALLOW_DATA_ATTR: false,
    ALLOW_UNKNOWN_PROTOCOLS: false,
  });
}

const markdown = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    code({ text, lang }) {
      const highlighted = lang ? highlightLanguage(text, lang) : undefined;
      const escaped = highlighted ?? escapeHtml(text);
      return `<pre class="md-code"><code class="hljs">${escaped}</code></pre>\n`;
    },
  },
});

/** Markdown (from the model) to sanitised HTML. */
export function renderMarkdown(text: string): string {
  return sanitizeHtml(markdown.parse(text, { async: false }));
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
