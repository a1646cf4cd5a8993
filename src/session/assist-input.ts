/** The options of session.complete() and session.inspect(), and the checks on what a caller passes them. */
import { InvalidInputError } from '../errors.js';
import { codePointLength } from './assist-replies.js';
import type { Language } from './languages.js';

export interface AssistOptions {
  /** The context whose live state answers. @default `language`'s default context, else `python` */
  context?: string;
  /** Ask this language's default context (created on first use, as by run()). */
  language?: Language;
}

export interface InspectOptions extends AssistOptions {
  /** 0: the signature and docstring; 1: the source too, where the kernel has it. @default 0 */
  detailLevel?: 0 | 1;
}

/** Throws InvalidInputError unless `code` is a string within `maxCodeBytes` and `cursorPos` a position in it. */
export function checkAssistInput(code: unknown, cursorPos: unknown, options: unknown, maxCodeBytes: number): void {
  if (typeof code !== 'string') throw new InvalidInputError('Code must be a string.');
  const size = Buffer.byteLength(code, 'utf8');
  if (size > maxCodeBytes) {
    throw new InvalidInputError(`The code is ${size} bytes; the limit is ${maxCodeBytes} (option \`maxCodeBytes\`).`);
  }
  const length = codePointLength(code);
  if (typeof cursorPos !== 'number' || !Number.isInteger(cursorPos) || cursorPos < 0 || cursorPos > length) {
    throw new InvalidInputError(
      `The cursor position must be an integer from 0 to the code's length in code points (${length}).`,
    );
  }
  if (typeof options !== 'object' || options === null) throw new InvalidInputError('The options must be an object.');
  const { detailLevel } = options as InspectOptions;
  if (detailLevel !== undefined && detailLevel !== 0 && detailLevel !== 1) {
    throw new InvalidInputError('`detailLevel` is 0 or 1.');
  }
}
