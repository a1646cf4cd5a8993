/** One argument as a bash word, for `exec`'s command line and for commands the CLI suggests. */

/** Single-quoted unless plainly safe, so no character in it is special to the shell. */
export function shellQuote(argument: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(argument)) return argument;
  return `'${argument.replaceAll("'", `'\\''`)}'`;
}
