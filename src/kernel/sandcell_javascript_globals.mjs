// What the JavaScript kernel adds to the global object for cells (`require`, `display`, the
// module loader behind `import`, the hook that resumes a stepped cell), and `reset`, which takes the global object back to how it
// was once these were added: names the cells declared are gone, built-ins they replaced are back.
import { builtinModules, createRequire } from 'node:module';
import path from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';
import { IMPORT_KEY, IMPORT_META_KEY } from './sandcell_javascript_cell.mjs';
import { runStep, STEP_KEY } from './sandcell_javascript_stepper.mjs';

const BUILTINS = new Set(builtinModules);

function cellRequire() {
  return createRequire(path.join(process.cwd(), '[cell]'));
}

/**
 * Loads a module for a cell's `import`: built-ins by name, paths relative to the working
 * directory (as Node's REPL does), packages found from it by Node's resolution.
 */
async function importForCell(specifier) {
  const text = String(specifier);
  if (text.startsWith('node:') || BUILTINS.has(text) || /^(file|data):/.test(text)) return import(text);
  if (text.startsWith('./') || text.startsWith('../') || text.startsWith('/')) {
    return import(pathToFileURL(path.resolve(process.cwd(), text)).href);
  }
  return import(pathToFileURL(cellRequire().resolve(text)).href);
}

function defineHidden(key, value) {
  Object.defineProperty(globalThis, key, { value, writable: true, configurable: true, enumerable: false });
}

/**
 * Adds the kernel's globals; `display(value, metadata)` sends a display of the running execution.
 * Returns `reset()`.
 */
export function installGlobals(display) {
  defineHidden('require', cellRequire());
  defineHidden('display', display);
  defineHidden(Symbol.for(IMPORT_KEY), importForCell);
  defineHidden(Symbol.for(STEP_KEY), runStep);
  Object.defineProperty(globalThis, Symbol.for(IMPORT_META_KEY), {
    get: () => ({ url: pathToFileURL(path.join(process.cwd(), '[cell]')).href }),
    configurable: true,
    enumerable: false,
  });
  const initial = new Map(
    Reflect.ownKeys(globalThis).map((key) => [key, Object.getOwnPropertyDescriptor(globalThis, key)]),
  );
  return () => resetGlobals(initial);
}

function sameDescriptor(left, right) {
  return (
    left.value === right.value &&
    left.get === right.get &&
    left.set === right.set &&
    left.writable === right.writable &&
    left.enumerable === right.enumerable &&
    left.configurable === right.configurable
  );
}

function resetGlobals(initial) {
  for (const key of Reflect.ownKeys(globalThis)) {
    const original = initial.get(key);
    if (original === undefined) {
      // A name the cells added. One they made non-configurable cannot go; it loses its value.
      if (!Reflect.deleteProperty(globalThis, key)) Reflect.set(globalThis, key, undefined);
    } else if (!sameDescriptor(original, Object.getOwnPropertyDescriptor(globalThis, key))) {
      Reflect.defineProperty(globalThis, key, original);
    }
  }
  for (const [key, descriptor] of initial) {
    if (!Object.hasOwn(globalThis, key)) Reflect.defineProperty(globalThis, key, descriptor);
  }
  const require = globalThis.require;
  for (const key of Object.keys(require.cache)) delete require.cache[key];
}
