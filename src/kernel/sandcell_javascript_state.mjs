// A JavaScript or TypeScript context's state written down and read back, for snapshots: the
// kernel's `state-save` and `state-load` requests.
//
// What is kept: every global the cells declared or assigned (the kernel makes their top-level
// declarations properties of the global object; what was there once its own globals were added
// is the baseline, left out), the working directory and the execution count. Values go through
// one v8.serialize, so what two names share is shared again after loading. Functions and classes
// come back from their source text, evaluated in the global scope, when nothing but globals is
// free in it: one made inside another function closes over that function's variables, which no
// source holds. An instance of a class that came back gets its prototype again (v8 keeps only
// its own properties). What cannot be kept (a promise, a timer, a socket, a symbol, an object
// holding a function) is left out and named with the reason, costing only its own name. A
// `const` comes back as the kernel makes every declaration: a writable global, so a cell that
// declares it runs again.
//
// The file: a line `sandcell-javascript-state 1`, a line holding the header's length in bytes,
// the header (JSON: the names, the functions' sources, the instances' classes, what was left
// out, the working directory, the execution count), then the values (v8.serialize). Loading runs
// the functions' sources, so a file is loaded only once the host checked it wrote it.
import { Buffer } from 'node:buffer';
import { closeSync, fchmodSync, openSync, readFileSync, writeSync } from 'node:fs';
import process from 'node:process';
import v8 from 'node:v8';
import vm from 'node:vm';
import { PARSE_OPTIONS } from './sandcell_javascript_cell.mjs';

const MAGIC = Buffer.from('sandcell-javascript-state 1\n');
// The cells may replace these globals; the state keeps the originals.
const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf, is, keys, setPrototypeOf } = Object;
const { ownKeys } = Reflect;
const { parse: parseJson, stringify } = JSON;
const isArray = Array.isArray;
const isView = ArrayBuffer.isView;
const functionSource = Function.prototype.call.bind(Function.prototype.toString);
// What v8.serialize keeps whole, prototype included, and holds nothing to look into.
const LEAVES = new Set(
  [
    Date,
    RegExp,
    ArrayBuffer,
    Boolean,
    Number,
    String,
    Error,
    EvalError,
    RangeError,
    ReferenceError,
    SyntaxError,
    TypeError,
    URIError,
  ].map((type) => type.prototype),
);

/** A request that failed: `code` is the reply's error code. */
export class StateError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** The global object as it is now, before any cell ran: what `saveState` leaves out. */
export function captureBaseline() {
  return new Map(ownKeys(globalThis).map((key) => [key, getOwnPropertyDescriptor(globalThis, key)]));
}

/** The globals the cells added or replaced, in the order they were added. */
function userGlobals(baseline) {
  return ownKeys(globalThis).filter((key) => {
    if (typeof key !== 'string') return false;
    const original = baseline.get(key);
    // Node's lazy globals (`crypto`, `fetch`…) turn from accessors into values once read.
    return (
      original === undefined ||
      ('value' in original && !is(getOwnPropertyDescriptor(globalThis, key).value, original.value))
    );
  });
}

/**
 * Writes the state to `file` (created or truncated, mode 0600); returns the report (`saved`,
 * `skipped`). `parser` is acorn, to read the functions' sources.
 */
export function saveState(file, { baseline, parser, executionCount }) {
  const skipped = [];
  const functions = [];
  const kept = new Map(); // a function kept → its name, for a second name holding it
  const classes = new Map(); // a kept function's prototype → { name, privateFields }
  const valueNames = [];
  const names = userGlobals(baseline);
  for (const name of names) {
    const descriptor = getOwnPropertyDescriptor(globalThis, name);
    if (!('value' in descriptor)) {
      skipped.push({ name, reason: 'accessor' });
      continue;
    }
    const value = descriptor.value;
    if (typeof value !== 'function') {
      valueNames.push(name);
      continue;
    }
    if (kept.has(value)) {
      functions.push({ name, aliasOf: kept.get(value) });
      continue;
    }
    const read = readFunction(parser, value);
    if (read.reason !== undefined) {
      skipped.push({ name, reason: read.reason });
      continue;
    }
    functions.push({ name, source: read.source });
    kept.set(value, name);
    const prototype = value.prototype;
    if (prototype !== null && typeof prototype === 'object') {
      classes.set(prototype, { name, privateFields: read.privateFields });
    }
  }
  const { values, instances, payload } = serializeValues(valueNames, classes, skipped);
  // Reported in the order the cells declared them.
  const position = new Map(names.map((name, index) => [name, index]));
  skipped.sort((left, right) => position.get(left.name) - position.get(right.name));
  const header = Buffer.from(
    stringify({
      values,
      functions,
      instances,
      skipped,
      cwd: process.cwd(),
      executionCount,
    }),
  );
  const data = Buffer.concat([MAGIC, Buffer.from(`${header.length}\n`), header, payload]);
  let fd;
  try {
    fd = openSync(file, 'w', 0o600);
    fchmodSync(fd, 0o600); // a file that was there keeps its mode otherwise
    for (let offset = 0; offset < data.length; ) offset += writeSync(fd, data, offset);
  } catch (error) {
    throw new StateError('state-failed', `could not write ${file}: ${error.message}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const savedNames = new Set([...values, ...functions.map((entry) => entry.name)]);
  return { saved: names.filter((name) => savedNames.has(name)), skipped };
}

/**
 * A function's source, when evaluating it in the global scope makes the same function: it parses
 * as an expression (a method's or a built-in's does not) and only globals are free in it.
 */
function readFunction(parser, fn) {
  const source = functionSource(fn);
  if (/\{\s*\[native code\]\s*\}$/.test(source)) return { reason: 'function (built-in or bound)' };
  let expression;
  try {
    expression = parser.parse(`(${source}\n)`, PARSE_OPTIONS).body[0].expression;
  } catch {
    return { reason: 'function (not a declaration: a method or accessor)' };
  }
  const found = freeNames(expression);
  for (const name of found.names) if (!(name in globalThis)) return { reason: 'function (closure)' };
  // An arrow's `this` is the one of where it was made: at a cell's top level, the global object.
  if (found.outerThis) return { reason: 'function (closure)' };
  return { source, privateFields: found.privateFields };
}

/**
 * The names a function's code reads that nothing in it declares (any declaration inside counts,
 * whatever its block: a name it both declares and reads from outside is not caught), whether
 * it uses the `this` of where it was made (an arrow), whether it has private fields.
 */
function freeNames(root) {
  const declared = new Set();
  const read = new Set();
  let outerThis = false;
  let privateFields = false;
  const declare = (pattern) => {
    if (pattern === null) return;
    if (pattern.type === 'Identifier') declared.add(pattern.name);
    else if (pattern.type === 'ObjectPattern') {
      for (const property of pattern.properties) declare(property.type === 'RestElement' ? property : property.value);
    } else if (pattern.type === 'ArrayPattern') for (const element of pattern.elements) declare(element);
    else if (pattern.type === 'RestElement') declare(pattern.argument);
    else if (pattern.type === 'AssignmentPattern') declare(pattern.left);
  };
  const visit = (node, ownThis, parent, key) => {
    switch (node.type) {
      case 'Identifier':
        // Names that are not variables: `a.name`, `{ name: 1 }`, a method's name, a label.
        if (key === 'property' && parent.type === 'MemberExpression' && !parent.computed) return;
        if (key === 'key' && !parent.computed) return;
        if (key === 'label') return;
        if (node.name === 'arguments' && ownThis) return;
        read.add(node.name);
        return;
      case 'ThisExpression':
        if (!ownThis) outerThis = true;
        return;
      case 'PrivateIdentifier':
        privateFields = true;
        return;
      case 'MetaProperty':
        return;
      case 'FunctionDeclaration':
      case 'FunctionExpression':
      case 'ArrowFunctionExpression':
        declare(node.id ?? null);
        for (const param of node.params) declare(param);
        break;
      case 'ClassDeclaration':
      case 'ClassExpression':
        declare(node.id ?? null);
        break;
      case 'VariableDeclarator':
        declare(node.id);
        break;
      case 'CatchClause':
        declare(node.param ?? null);
        break;
    }
    // A function (not an arrow) and a class body have their own `this` and `arguments`.
    const innerThis = ownThis || ['FunctionExpression', 'FunctionDeclaration', 'ClassBody'].includes(node.type);
    for (const childKey in node) {
      const value = node[childKey];
      if (isArray(value)) {
        for (const child of value)
          if (child !== null && typeof child?.type === 'string') visit(child, innerThis, node, childKey);
      } else if (value !== null && typeof value === 'object' && typeof value.type === 'string') {
        visit(value, innerThis, node, childKey);
      }
    }
  };
  visit(root, false, null, null);
  return { names: [...read].filter((name) => !declared.has(name)), outerThis, privateFields };
}

/**
 * The values as one v8.serialize of `{ values, instances }`; `instances` are the objects of kept
 * classes in them, whose classes the header names. Names that cannot be kept go to `skipped`.
 */
function serializeValues(names, classes, skipped) {
  const values = {};
  const instances = new Map(); // object → { className, name }
  for (const name of names) {
    const value = globalThis[name];
    const found = examine(value, classes);
    if (found.reason !== undefined) {
      skipped.push({ name, reason: found.reason });
      continue;
    }
    values[name] = value;
    for (const [object, className] of found.instances) {
      if (!instances.has(object)) instances.set(object, { className, name });
    }
  }
  const serialize = () => v8.serialize({ values, instances: [...instances.keys()] });
  let payload;
  try {
    payload = serialize();
  } catch {
    // Each name alone finds the ones v8 refuses (what `examine` let through); the rest go whole.
    for (const name of keys(values)) {
      try {
        v8.serialize(values[name]);
      } catch (error) {
        // v8 recurses: a long linked list overflows the stack.
        const deep = /call stack/.test(String(error?.message));
        skipped.push({ name, reason: deep ? 'too deeply nested to be cloned' : 'could not be cloned' });
        delete values[name];
        for (const [object, entry] of instances) if (entry.name === name) instances.delete(object);
      }
    }
    payload = serialize();
  }
  return { values: keys(values), instances: [...instances.values()], payload };
}

/**
 * Why v8.serialize cannot keep `value` as it is (`reason`), else the instances of kept classes
 * in it, with their classes' names (v8 keeps them as plain objects).
 */
function examine(value, classes) {
  if (typeof value === 'symbol') return { reason: 'Symbol' };
  const instances = [];
  const seen = new Set();
  const pending = [value];
  const refuse = (item, what) => ({ reason: item === value ? what : `contains a ${what}` });
  try {
    while (pending.length > 0) {
      const item = pending.pop();
      if (typeof item === 'function') return refuse(item, 'function');
      if (typeof item === 'symbol') return refuse(item, 'Symbol');
      if (item === null || typeof item !== 'object' || seen.has(item)) continue;
      seen.add(item);
      const prototype = getPrototypeOf(item);
      if (isArray(item)) {
        for (let index = 0; index < item.length; index++) pending.push(item[index]);
      } else if (prototype === Map.prototype) {
        for (const [key, entry] of item) pending.push(key, entry);
      } else if (prototype === Set.prototype) {
        for (const entry of item) pending.push(entry);
      } else if (isView(item) || LEAVES.has(prototype)) {
        // kept whole
      } else if (prototype === Object.prototype || prototype === null) {
        for (const key of keys(item)) pending.push(item[key]);
      } else if (classes.has(prototype)) {
        for (let above = prototype; above !== null; above = getPrototypeOf(above)) {
          // v8 does not see private fields: the instance would come back without them.
          if (classes.get(above)?.privateFields) return refuse(item, `${typeName(item)} (private fields)`);
        }
        instances.push([item, classes.get(prototype).name]);
        for (const key of keys(item)) pending.push(item[key]);
      } else {
        return refuse(item, typeName(item));
      }
    }
  } catch (error) {
    return { reason: `could not be read (${error?.message ?? error})` };
  }
  return { instances };
}

/** `Promise`, `Socket`, `Timeout`: an object's class, without running its getters. */
function typeName(object) {
  for (let prototype = getPrototypeOf(object); prototype !== null; prototype = getPrototypeOf(prototype)) {
    const type = getOwnPropertyDescriptor(prototype, 'constructor')?.value;
    if (typeof type === 'function' && type.name) return type.name;
  }
  return 'object';
}

/** The file's header and values, read whole before anything changes. */
function readState(file) {
  let data;
  try {
    data = readFileSync(file);
  } catch (error) {
    throw new StateError('state-failed', `could not read ${file}: ${error.message}`);
  }
  if (!data.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new StateError('state-invalid', `${file} is not a sandcell JavaScript state file`);
  }
  try {
    const lineEnd = data.indexOf(10, MAGIC.length);
    const length = Number(data.subarray(MAGIC.length, lineEnd).toString());
    const start = lineEnd + 1;
    if (lineEnd === -1 || !Number.isInteger(length) || length < 0 || start + length > data.length) {
      throw new Error('its header is cut');
    }
    const header = parseJson(data.subarray(start, start + length).toString());
    const lists = [header?.values, header?.functions, header?.instances, header?.skipped];
    if (!lists.every(isArray) || typeof header.cwd !== 'string' || !Number.isInteger(header.executionCount)) {
      throw new Error('its header lacks what a state holds');
    }
    const saved = v8.deserialize(data.subarray(start + length));
    if (typeof saved?.values !== 'object' || saved.instances?.length !== header.instances.length) {
      throw new Error('its values do not match its header');
    }
    return { header, saved };
  } catch (error) {
    throw new StateError('state-invalid', `${file} is not a readable state file: ${error.message}`);
  }
}

/** A global as the kernel declares one; a built-in the cells replaced keeps its own attributes. */
function defineGlobal(name, value) {
  const existing = getOwnPropertyDescriptor(globalThis, name);
  if (existing !== undefined && 'value' in existing && existing.writable) globalThis[name] = value;
  else defineProperty(globalThis, name, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * Reads a state file into the global object; returns the report (`restored`, `skipped`,
 * `executionCount`). Nothing changes when the file is not a state file (`state-invalid`) or
 * cannot be read (`state-failed`). The skipped are those left out when it was saved and those
 * that fail to come back now.
 */
export function loadState(file) {
  const { header, saved } = readState(file);
  const restored = [];
  const skipped = [...header.skipped];
  // Values first: a class's `extends` or static fields may read them.
  for (const name of header.values) {
    defineGlobal(name, saved.values[name]);
    restored.push(name);
  }
  const functions = new Map();
  for (const entry of header.functions) {
    try {
      const fn =
        entry.aliasOf === undefined
          ? vm.runInThisContext(`(${entry.source}\n)`, { filename: `<restored ${entry.name}>` })
          : functions.get(entry.aliasOf);
      if (fn === undefined) throw new Error(`${entry.aliasOf} did not come back`);
      defineGlobal(entry.name, fn);
      functions.set(entry.name, fn);
      restored.push(entry.name);
    } catch (error) {
      skipped.push({ name: entry.name, reason: `function (could not be re-created: ${error?.message ?? error})` });
    }
  }
  for (const [index, { className, name }] of header.instances.entries()) {
    const type = functions.get(className);
    if (type !== undefined) setPrototypeOf(saved.instances[index], type.prototype);
    else if (restored.includes(name)) {
      restored.splice(restored.indexOf(name), 1);
      skipped.push({ name, reason: `holds an instance of ${className}, which did not come back` });
    }
  }
  try {
    process.chdir(header.cwd);
  } catch (error) {
    skipped.push({ name: '(working directory)', reason: `${header.cwd}: ${error.code ?? error.message}` });
  }
  return { restored, skipped, executionCount: header.executionCount };
}
