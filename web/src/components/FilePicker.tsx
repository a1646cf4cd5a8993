/** A hidden file input that a button opens: what is chosen goes to `onPick`, and it is emptied for the next choice. */
import type { RefObject } from 'preact';

export function FilePicker({
  inputRef,
  label,
  onPick,
}: {
  inputRef: RefObject<HTMLInputElement | null>;
  /** Its name for assistive technology; without one it is hidden from it (the button beside it speaks). */
  label?: string;
  onPick: (files: File[]) => void;
}) {
  return (
    <input
      ref={inputRef}
      type="file"
      multiple
      class="visually-hidden"
      tabIndex={-1}
      {...(label === undefined ? { 'aria-hidden': 'true' } : { 'aria-label': label })}
      onChange={(event) => {
        const input = event.currentTarget as HTMLInputElement;
        const chosen = Array.from(input.files ?? []);
        input.value = '';
        if (chosen.length > 0) onPick(chosen);
      }}
    />
  );
}
