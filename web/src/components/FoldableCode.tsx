/**
 * Code as a step shows it: a long one (a model's 70-line script) folded to
 * its first lines with "Show all", so the outputs below stay in reach.
 */
import { useState } from 'preact/hooks';
import type { CodeStep } from '../../../src/protocol/index';
import { HighlightedCode } from './HighlightedCode';

/** Folded, 15 lines show (`.foldable-code.is-folded` in styles.css); folding five away saves nothing: fold only code longer than this. */
const FOLD_AFTER_LINES = 20;

export function FoldableCode({ code, language }: { code: string; language?: CodeStep['language'] }) {
  const [expanded, setExpanded] = useState(false);
  const lines = code.split('\n').length;
  if (lines <= FOLD_AFTER_LINES) return <HighlightedCode code={code} language={language} />;
  return (
    <div class={`foldable-code${expanded ? '' : ' is-folded'}`}>
      <HighlightedCode code={code} language={language} />
      <button type="button" class="fold-toggle" aria-expanded={expanded} onClick={() => setExpanded((value) => !value)}>
        {expanded ? 'Show less' : `Show all ${lines} lines`}
      </button>
    </div>
  );
}
