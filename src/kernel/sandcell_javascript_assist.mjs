// Completion and inspection for the JavaScript and TypeScript kernel (sandcell_javascript_kernel.mjs),
// from the live global object the cells share: the names of globals (cells' declarations are
// globals here) and keywords, and after `a.b.` the properties of that object and its prototypes.
// Nothing here runs the user's code: a path is followed through data properties only (a getter
// is never called, a Proxy never entered), and inspection prints without custom inspectors.
// Positions come and go in code points, as Jupyter counts them; JavaScript strings count UTF-16.
import { inspect as printValue, types } from 'node:util';

const MATCH_LIMIT = 1000;
const INSPECT_CHARS = 256 * 1024;
const SUMMARY_SOURCE_CHARS = 2000;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
// `a.b?.c` before the cursor: the path (group 1), then the partial name after its last dot (group 2).
const MEMBER = /([A-Za-z_$][\w$]*(?:\s*\??\.\s*[A-Za-z_$][\w$]*)*)\s*\??\.\s*([A-Za-z_$][\w$]*)?$/;
const NAME = /[A-Za-z_$][\w$]*$/;
const KEYWORDS = [
  'await',
  'break',
  'case',
  'catch',
  'class',
  'const',
  'continue',
  'debugger',
  'default',
  'delete',
  'do',
  'else',
  'export',
  'extends',
  'false',
  'finally',
  'for',
  'function',
  'if',
  'import',
  'in',
  'instanceof',
  'let',
  'new',
  'null',
  'return',
  'static',
  'super',
  'switch',
  'this',
  'throw',
  'true',
  'try',
  'typeof',
  'undefined',
  'var',
  'void',
  'while',
  'with',
  'yield',
];

/** UTF-16 index of code point `position` in `text` (its end when past it or not a position). */
function utf16Index(text, position) {
  if (!Number.isInteger(position) || position < 0) return text.length;
  let index = 0;
  for (let count = 0; count < position && index < text.length; count += 1) {
    index += text.codePointAt(index) > 0xffff ? 2 : 1;
  }
  return index;
}

function codePoints(text) {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/** The value at `path` (`a.b.c`) from the global object, through data properties only; undefined when not reachable. */
function resolvePath(path) {
  let value = globalThis;
  for (const name of path.split(/\s*\??\.\s*/)) {
    if (value === null || value === undefined || types.isProxy(value)) return { found: false };
    const descriptor = findDescriptor(Object(value), name);
    if (!descriptor || !('value' in descriptor)) return { found: false };
    value = descriptor.value;
  }
  return { found: true, value };
}

function findDescriptor(object, name) {
  for (let target = object; target !== null; target = Object.getPrototypeOf(target)) {
    if (types.isProxy(target)) return undefined;
    const descriptor = Object.getOwnPropertyDescriptor(target, name);
    if (descriptor) return descriptor;
  }
  return undefined;
}

/** Property names of `value` and its prototypes that can follow a dot, starting with `prefix`. */
function propertyNames(value, prefix) {
  const names = new Set();
  for (
    let target = Object(value);
    target !== null && names.size < MATCH_LIMIT;
    target = Object.getPrototypeOf(target)
  ) {
    if (types.isProxy(target)) break;
    for (const name of Object.getOwnPropertyNames(target)) {
      if (name.startsWith(prefix) && IDENTIFIER.test(name)) names.add(name);
    }
  }
  return names;
}

/** `{ matches, cursorStart, cursorEnd, metadata }` for the cursor at code point `cursorPos`. */
export function complete(code, cursorPos) {
  const cursor = utf16Index(code, cursorPos);
  const before = code.slice(0, cursor);
  const member = MEMBER.exec(before);
  let names;
  let prefix;
  if (member) {
    prefix = member[2] ?? '';
    const target = resolvePath(member[1]);
    names =
      target.found && target.value !== null && target.value !== undefined
        ? propertyNames(target.value, prefix)
        : new Set();
  } else {
    prefix = NAME.exec(before)?.[0] ?? '';
    names = propertyNames(globalThis, prefix);
    for (const keyword of KEYWORDS) if (keyword.startsWith(prefix)) names.add(keyword);
  }
  const end = codePoints(before);
  const matches = [...names].sort().slice(0, MATCH_LIMIT);
  return { matches, cursorStart: end - codePoints(prefix), cursorEnd: end, metadata: {} };
}

/** `{ found, data, metadata }`: the value named at the cursor, printed; a function with its source. */
export function inspect(code, cursorPos, detailLevel) {
  const cursor = utf16Index(code, cursorPos);
  const after = /^[\w$]*/.exec(code.slice(cursor))[0];
  const path = /[A-Za-z_$][\w$]*(?:\s*\??\.\s*[A-Za-z_$][\w$]*)*$/.exec(code.slice(0, cursor) + after)?.[0];
  const empty = { found: false, data: {}, metadata: {} };
  if (!path) return empty;
  const target = resolvePath(path);
  if (!target.found) return empty;
  const { value } = target;
  const kind = value === null ? 'null' : typeof value;
  const lines = [`${path}: ${kind === 'object' ? constructorName(value) : kind}`];
  if (typeof value === 'function') {
    const source = Function.prototype.toString.call(value);
    lines.push(detailLevel === 1 ? source : source.slice(0, SUMMARY_SOURCE_CHARS));
  } else {
    lines.push(
      printValue(value, { depth: 1, customInspect: false, showProxy: true, getters: false, maxStringLength: 2000 }),
    );
  }
  return { found: true, data: { 'text/plain': lines.join('\n').slice(0, INSPECT_CHARS) }, metadata: {} };
}

function constructorName(value) {
  if (types.isProxy(value)) return 'Proxy';
  const descriptor = findDescriptor(value, 'constructor');
  const maker = descriptor && 'value' in descriptor ? descriptor.value : undefined;
  if (typeof maker !== 'function' || types.isProxy(maker)) return 'object';
  const name = Object.getOwnPropertyDescriptor(maker, 'name')?.value;
  return typeof name === 'string' && name ? name : 'object';
}
