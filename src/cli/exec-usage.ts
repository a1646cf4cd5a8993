/**
 * `sandcell exec ls -la` reads `-la` as an option of exec's own, which it is not: commander's
 * "unknown option" error then says how to write it, with the command after `--`.
 */
import { shellQuote } from './shell-quote.js';

/**
 * The command line to suggest, or undefined when the unknown option came before any command word
 * (a mistyped exec option: commander's own suggestion is the better one). `words` are what followed
 * `exec` on the command line; `args` what commander kept of them as the command (its words, the
 * unknown option and what it did not recognise after it), in their order.
 */
export function execSuggestion(words: string[], args: string[], unknownFlag: string): string | undefined {
  if (args.indexOf(unknownFlag) <= 0) return undefined;
  // exec's own options stay before --: the words that are not the command's, matched from the end
  // (so an option's value equal to a command word stays with its option).
  const own = [...words];
  for (let index = own.length - 1, wanted = args.length - 1; index >= 0 && wanted >= 0; index--) {
    if (own[index] === args[wanted]) {
      own.splice(index, 1);
      wanted--;
    }
  }
  return ['sandcell', 'exec', ...own.map(shellQuote), '--', ...args.map(shellQuote)].join(' ');
}

/**
 * Commander's error text with the suggestion added when it is an unknown option after a command
 * word. `programArgs` are the words the program left to its subcommand (`exec` and what follows).
 */
export function execErrorText(text: string, programArgs: string[], args: string[]): string {
  const flag = /unknown option '([^']+)'/.exec(text)?.[1];
  const start = programArgs.indexOf('exec');
  if (flag === undefined || start === -1) return text;
  const suggestion = execSuggestion(programArgs.slice(start + 1), args, flag);
  if (!suggestion) return text;
  return `${text.trimEnd()}\nThe command's own options go after --: ${suggestion}\n`;
}
