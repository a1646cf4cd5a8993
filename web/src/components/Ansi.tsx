import { ansiSegments } from '../render/ansi';

/** Text with ANSI colours shown as classed spans (never as HTML). */
export function AnsiText({ text }: { text: string }) {
  return (
    <>
      {ansiSegments(text).map((segment, index) =>
        segment.className ? (
          <span key={index} class={segment.className}>
            {segment.text}
          </span>
        ) : (
          segment.text
        ),
      )}
    </>
  );
}
