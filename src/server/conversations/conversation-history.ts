/**
 * What a conversation keeps, within its bounds: its turns and images, the
 * bytes they take (turns as JSON, each settled one measured once, and the
 * images), and the dropping of the oldest outputs, then the oldest turns, to
 * get under a target (history-limits.ts says what goes first and why); and
 * what of a history read back from disk it takes back.
 */
import type { Turn } from '../../protocol/index.js';
import type { ImageStore } from '../core/image-store.js';
import { hasOutputs, isSettled, outputsDroppedNote, turnImageUrls, withoutOutputs } from './history-limits.js';
import type { ReadHistory } from './history-records.js';
import { jsonBytes } from './output-budget.js';

export class ConversationHistory {
  readonly turns: Turn[] = [];
  /** Turns dropped whole to keep the history within its bounds. */
  droppedTurns = 0;
  /** The JSON bytes of each settled turn, measured once. */
  private readonly measured = new WeakMap<Turn, number>();

  constructor(
    readonly images: ImageStore,
    /** The conversation's own bound, named in the note that replaces dropped outputs. */
    private readonly historyBytes: number,
    /** Older turns changed (outputs or turns dropped). */
    private readonly rewritten: () => void,
  ) {}

  /** Takes back a history read from disk: its turns, how many were dropped, and the images its turns link. */
  restore(read: Pick<ReadHistory, 'turns' | 'droppedTurns' | 'images'>): void {
    this.droppedTurns = read.droppedTurns;
    const linked = new Set(read.turns.flatMap((turn) => turnImageUrls(turn)).map(imageName));
    for (const [name, image] of read.images) {
      if (linked.has(name)) this.images.restore({ name, ...image });
    }
    this.turns.push(...read.turns);
  }

  /** The bytes this history holds: its turns as JSON, and its images. */
  get bytes(): number {
    let total = this.images.totalBytes;
    for (const turn of this.turns) total += this.turnBytes(turn);
    return total;
  }

  private turnBytes(turn: Turn): number {
    const known = this.measured.get(turn);
    if (known !== undefined) return known;
    const bytes = jsonBytes(turn);
    // The running turn changes with every event; a settled one is measured once.
    if (turn.status !== 'running') this.measured.set(turn, bytes);
    return bytes;
  }

  /**
   * Replaces the outputs of settled code steps with a note, oldest first, until
   * the history takes at most `targetBytes` (or no output is left to drop).
   */
  dropOutputs(targetBytes: number): void {
    let size = this.bytes;
    const note = outputsDroppedNote(this.historyBytes);
    for (let index = 0; index < this.turns.length && size > targetBytes; index++) {
      const turn = this.turns[index]!;
      const steps = turn.steps.slice();
      let changed = false;
      for (let position = 0; position < steps.length && size > targetBytes; position++) {
        const step = steps[position]!;
        if (step.type !== 'code' || !isSettled(step) || !hasOutputs(step, note)) continue;
        const imageBytes = this.images.totalBytes;
        for (const result of step.results) for (const image of result.images ?? []) this.forgetImage(image.url);
        const kept = withoutOutputs(step, note);
        size -= jsonBytes(step) - jsonBytes(kept) + (imageBytes - this.images.totalBytes);
        steps[position] = kept;
        changed = true;
      }
      if (changed) {
        this.turns[index] = { ...turn, steps };
        this.rewritten();
      }
    }
  }

  /**
   * Drops whole turns, oldest first, until the history takes at most
   * `targetBytes`; never the newest turn (the running one, or the one just
   * done). `dropped` is called after each.
   */
  dropTurns(targetBytes: number, dropped: () => void): void {
    let size = this.bytes;
    while (size > targetBytes && this.turns.length > 1) {
      const turn = this.turns.shift()!;
      const imageBytes = this.images.totalBytes;
      for (const url of turnImageUrls(turn)) this.forgetImage(url);
      size -= this.turnBytes(turn) + (imageBytes - this.images.totalBytes);
      this.droppedTurns++;
      dropped();
      this.rewritten();
    }
  }

  private forgetImage(url: string): void {
    this.images.delete(imageName(url));
  }
}

/** The name an image is stored under, from the URL a result links it with. */
export function imageName(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}
