/**
 * A code editor (Python highlighted, other languages plain): a plain textarea over a highlighted copy of its text, so
 * typing, selection, undo and screen readers work as in any textarea. Tab
 * indents; Escape then Tab leaves the editor (keyboard users are not trapped).
 */
import { useMemo, useRef } from 'preact/hooks';
import { highlightCode } from '../render/highlight';

export interface CodeEditorProps {
  value: string;
  onInput: (value: string) => void;
  /** Ctrl+Enter, Cmd+Enter or Shift+Enter. */
  onRun?: () => void;
  label: string;
  disabled?: boolean;
  placeholder?: string;
  autoFocus?: boolean;
  id?: string;
  describedBy?: string;
  /** @default python */
  language?: string;
}

const INDENT = '    ';

export function CodeEditor(props: CodeEditorProps) {
  const { value, onInput, onRun, label, disabled, placeholder, autoFocus, id, describedBy, language } = props;
  const tabLeaves = useRef(false);
  // The trailing newline keeps the highlighted copy as tall as the textarea when the text ends with one.
  const highlighted = useMemo(() => `${highlightCode(value, language)}\n`, [value, language]);

  /** Replaces start..end with text, through the browser's editing so undo keeps working. */
  const replace = (area: HTMLTextAreaElement, start: number, end: number, text: string, caret: number) => {
    area.setSelectionRange(start, end);
    // execCommand is deprecated but is still the only way to keep the undo stack; fall back without it.
    if (!document.execCommand?.('insertText', false, text)) area.setRangeText(text, start, end, 'end');
    area.setSelectionRange(caret, caret);
    onInput(area.value);
  };

  const onKeyDown = (event: KeyboardEvent) => {
    const area = event.currentTarget as HTMLTextAreaElement;
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey || event.shiftKey)) {
      event.preventDefault();
      onRun?.();
      return;
    }
    if (event.key === 'Escape') {
      tabLeaves.current = true;
      return;
    }
    if (event.key === 'Tab' && !tabLeaves.current && !event.ctrlKey && !event.altKey && !event.metaKey) {
      event.preventDefault();
      const { selectionStart: start, selectionEnd: end } = area;
      const text = area.value;
      const lineStart = text.lastIndexOf('\n', start - 1) + 1;
      if (event.shiftKey) {
        const removable = text.slice(lineStart, lineStart + INDENT.length).match(/^ {1,4}/)?.[0].length ?? 0;
        if (removable > 0) replace(area, lineStart, lineStart + removable, '', Math.max(lineStart, start - removable));
      } else if (start === end) {
        replace(area, start, end, INDENT, start + INDENT.length);
      } else {
        // Indent every selected line.
        const indented = text.slice(lineStart, end).replace(/^/gm, INDENT);
        replace(area, lineStart, end, indented, lineStart + indented.length);
      }
      return;
    }
    if (event.key === 'Enter' && !event.isComposing) {
      // Keep the indentation of the line (one level more after a colon).
      event.preventDefault();
      const { selectionStart: start, selectionEnd: end } = area;
      const text = area.value;
      const lineStart = text.lastIndexOf('\n', start - 1) + 1;
      const line = text.slice(lineStart, start);
      let indent = line.match(/^[ \t]*/)?.[0] ?? '';
      if ((language ?? 'python') === 'python' && /:\s*$/.test(line)) indent += INDENT;
      replace(area, start, end, `\n${indent}`, start + 1 + indent.length);
      return;
    }
    tabLeaves.current = false;
  };

  return (
    <div class={`code-editor${disabled ? ' is-disabled' : ''}`}>
      <pre class="code-editor-highlight hljs" aria-hidden="true">
        <code dangerouslySetInnerHTML={{ __html: highlighted }} />
      </pre>
      <textarea
        id={id}
        class="code-editor-input"
        value={value}
        aria-label={label}
        aria-describedby={describedBy}
        placeholder={placeholder}
        spellcheck={false}
        autocapitalize="off"
        autocomplete="off"
        disabled={disabled}
        // biome-ignore lint/a11y/noAutofocus: the editor the user just opened.
        autoFocus={autoFocus}
        onInput={(event) => onInput((event.currentTarget as HTMLTextAreaElement).value)}
        onKeyDown={onKeyDown}
        onBlur={() => {
          tabLeaves.current = false;
        }}
      />
    </div>
  );
}
