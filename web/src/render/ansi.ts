/**
 * ANSI escape codes (as in IPython tracebacks) to styled segments: the SGR
 * colours and bold become class names, every other escape sequence is dropped.
 */
export interface AnsiSegment {
  text: string;
  /** Class names for the segment's colour and weight ('' when plain). */
  className: string;
}

// CSI sequences (ESC [ params letter), OSC sequences (ESC ] … BEL/ST) and lone two-byte escapes.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal escapes is the point.
const ESCAPE = /\x1b\[([0-9;?]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

interface Style {
  fg?: string;
  bg?: string;
  bold: boolean;
  italic: boolean;
  underline: boolean;
}

function classOf(style: Style): string {
  const names: string[] = [];
  if (style.fg) names.push(`ansi-fg-${style.fg}`);
  if (style.bg) names.push(`ansi-bg-${style.bg}`);
  if (style.bold) names.push('ansi-bold');
  if (style.italic) names.push('ansi-italic');
  if (style.underline) names.push('ansi-underline');
  return names.join(' ');
}

const COLOURS = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'];

function applySgr(style: Style, params: string): Style {
  const codes = params === '' ? [0] : params.split(';').map((part) => Number(part || 0));
  const next = { ...style };
  for (let index = 0; index < codes.length; index++) {
    const code = codes[index]!;
    if (code === 0) Object.assign(next, { fg: undefined, bg: undefined, bold: false, italic: false, underline: false });
    else if (code === 1) next.bold = true;
    else if (code === 3) next.italic = true;
    else if (code === 4) next.underline = true;
    else if (code === 22) next.bold = false;
    else if (code === 23) next.italic = false;
    else if (code === 24) next.underline = false;
    else if (code >= 30 && code <= 37) next.fg = COLOURS[code - 30];
    else if (code >= 90 && code <= 97) next.fg = `bright-${COLOURS[code - 90]}`;
    else if (code === 39) next.fg = undefined;
    else if (code >= 40 && code <= 47) next.bg = COLOURS[code - 40];
    else if (code >= 100 && code <= 107) next.bg = `bright-${COLOURS[code - 100]}`;
    else if (code === 49) next.bg = undefined;
    else if (code === 38 || code === 48) {
      // 256-colour and true-colour forms: skip their arguments, keep the default colour.
      const mode = codes[index + 1];
      index += mode === 5 ? 2 : mode === 2 ? 4 : 1;
    }
  }
  return next;
}

export function ansiSegments(text: string): AnsiSegment[] {
  const segments: AnsiSegment[] = [];
  let style: Style = { bold: false, italic: false, underline: false };
  let last = 0;
  const push = (part: string) => {
    if (!part) return;
    const className = classOf(style);
    const previous = segments[segments.length - 1];
    if (previous && previous.className === className) previous.text += part;
    else segments.push({ text: part, className });
  };
  for (const match of text.matchAll(ESCAPE)) {
    push(text.slice(last, match.index));
    last = match.index + match[0].length;
    if (match[2] === 'm') style = applySgr(style, match[1] ?? '');
  }
  push(text.slice(last));
  return segments;
}

/** The text without any escape codes. */
export function stripAnsi(text: string): string {
  return text.replace(ESCAPE, '');
}
