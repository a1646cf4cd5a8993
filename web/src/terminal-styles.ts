/**
 * xterm.js writes its measured sizes and theme into `<style>` elements it makes itself, which this
 * page's Content-Security-Policy (`style-src 'self'`, no inline styles) refuses. Rather than allow
 * inline styles for the whole page, a `<style>` element made by script becomes a placeholder whose
 * text goes into a constructed stylesheet adopted by the document (CSSOM, which the policy does not
 * govern). Only script can make one: markup in the page (a model's answer, sanitized) still cannot
 * bring a style. Installed once, on the first terminal.
 */
let installed = false;

export function allowTerminalStyles(doc: Document): void {
  if (installed) return;
  installed = true;
  const original = doc.createElement.bind(doc);
  doc.createElement = ((tagName: string, options?: ElementCreationOptions) => {
    if (tagName.toLowerCase() !== 'style') return original(tagName, options);
    return adoptedStyle(doc, original('sandcell-style'));
  }) as Document['createElement'];
}

function adoptedStyle(doc: Document, element: HTMLElement): HTMLElement {
  const sheet = new CSSStyleSheet();
  let text = '';
  doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
  Object.defineProperty(element, 'textContent', {
    get: () => text,
    set: (value: string | null) => {
      text = value ?? '';
      sheet.replaceSync(text);
    },
  });
  const remove = element.remove.bind(element);
  element.remove = () => {
    doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((adopted) => adopted !== sheet);
    remove();
  };
  element.hidden = true;
  return element;
}
