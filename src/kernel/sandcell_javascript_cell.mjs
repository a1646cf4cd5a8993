// Turns a notebook cell into a script the JavaScript kernel can run, and run again.
//
// A cell's top-level declarations become assignments to the global object, so re-running
// `const x = 1` or `class C {}` works and the names outlive the cell (V8 has no REPL mode for
// vm scripts: a second global `const x` is a SyntaxError). The cell becomes a generator whose
// top-level `await`s are `yield`s: the kernel resumes it after each awaited value inside a vm call
// that SIGINT can break, so even a loop that runs after an `await` can be interrupted (a cell with
// a top-level `for await`, or that names a variable `yield`, runs as an async arrow instead). The
// last expression statement is returned, boxed in an array so that a returned promise is shown,
// not awaited. Static imports become dynamic ones.
// Every `import(...)` calls the kernel's loader, because a vm script's own import() needs
// --experimental-vm-modules. Edits never add lines, so line numbers in stack traces are the
// cell's own; `mapPosition` undoes their shift of columns.

/** The global property holding the kernel's module loader (a symbol: invisible to `Object.keys(globalThis)`). */
export const IMPORT_KEY = 'sandcell.import';
/** The global property holding the cell's `import.meta`. */
export const IMPORT_META_KEY = 'sandcell.importMeta';

const LOADER = `globalThis[Symbol.for(${JSON.stringify(IMPORT_KEY)})]`;
const IMPORT_META = `globalThis[Symbol.for(${JSON.stringify(IMPORT_META_KEY)})]`;
const WRAPPERS = {
  stepped: { start: '(function* () {', end: '\n}).call(globalThis)', await: 'yield' },
  async: { start: '(async () => {', end: '\n})()', await: 'await' },
};

export const PARSE_OPTIONS = Object.freeze({
  ecmaVersion: 'latest',
  sourceType: 'script',
  allowAwaitOutsideFunction: true,
  allowImportExportEverywhere: true,
  allowHashBang: true,
});

/**
 * Parses `source` (acorn, ES latest) and returns the script to run: `{ code, stepped, declaredNames,
 * mapPosition(line, column) }`; a stepped script gives a generator, the other a promise. `stepped:
 * false` asks for the async form. Throws acorn's SyntaxError for invalid code.
 */
export function rewriteCell(parser, source, { stepped: allowStepped = true } = {}) {
  const program = parseCell(parser, source);
  const edits = [];
  const declaredNames = new Set();
  const nested = /\b(var|import|await)\b/.test(source)
    ? rewriteNested(source, program, edits, declaredNames)
    : { awaits: [], forAwait: false };
  const stepped = allowStepped && !nested.forAwait;
  const wrapper = stepped ? WRAPPERS.stepped : WRAPPERS.async;
  edits.push({ start: 0, end: 0, text: wrapper.start });
  if (stepped) {
    for (const node of nested.awaits) {
      // `yield` binds looser than `await`: `await a + 1` becomes `(yield a) + 1`.
      edits.push({ start: node.start, end: node.start + 'await'.length, text: '(yield' });
      edits.push({ start: node.end, end: node.end, text: ')', inner: true });
    }
  }
  // A script's `#!` line (acorn skips it) cannot follow the wrapper's start.
  if (source.startsWith('#!'))
    edits.push(blank(source, 0, source.indexOf('\n') === -1 ? source.length : source.indexOf('\n')));
  const functionNames = [];
  const body = program.body;
  let directivesEnd = 0;
  for (const statement of body) {
    if (statement.directive === undefined) break;
    directivesEnd = statement.end;
  }
  for (const [index, statement] of body.entries()) {
    let node = statement;
    // A file run as a cell may export: what it declares stays, the export goes.
    if (node.type === 'ExportNamedDeclaration' && node.declaration) {
      edits.push(blank(source, node.start, node.declaration.start));
      node = node.declaration;
    } else if (node.type === 'ExportDefaultDeclaration') {
      const declaration = node.declaration;
      if (declaration.type.endsWith('Declaration') && declaration.id) {
        edits.push(blank(source, node.start, declaration.start));
        node = declaration;
      } else {
        // The keywords, not up to the declaration: acorn drops parentheses, `(1 + 2)` starts at `1`.
        const keywordsEnd = source.indexOf('default', node.start) + 'default'.length;
        const end = source[node.end - 1] === ';' ? node.end - 1 : node.end;
        edits.push({ start: node.start, end: keywordsEnd, text: 'void (' });
        edits.push({ start: end, end, text: ')' });
        continue;
      }
    } else if (node.type === 'ExportNamedDeclaration' || node.type === 'ExportAllDeclaration') {
      edits.push(blank(source, node.start, node.end));
      continue;
    }
    if (node.type === 'VariableDeclaration') {
      declarationToAssignment(source, node, edits, declaredNames, 'statement');
    } else if (node.type === 'ClassDeclaration') {
      declaredNames.add(node.id.name);
      edits.push({ start: node.start, end: node.start, text: `${node.id.name} = ` });
      edits.push({ start: node.end, end: node.end, text: ';' });
    } else if (node.type === 'FunctionDeclaration') {
      functionNames.push(node.id.name);
    } else if (node.type === 'ImportDeclaration') {
      edits.push(importToAssignment(source, node, declaredNames, wrapper.await));
    } else if (node.type === 'ExpressionStatement' && index === body.length - 1) {
      // The statement, not its expression: acorn drops parentheses, `({ a: 1 })` starts at `{`.
      const end = source[node.end - 1] === ';' ? node.end - 1 : node.end;
      edits.push({ start: node.start, end: node.start, text: 'return [(' });
      edits.push({ start: end, end, text: ')]' });
    }
  }
  // Declared functions are hoisted inside the wrapper; publishing them first (after any
  // 'use strict', which must stay first) makes them global before any of the cell runs.
  if (functionNames.length > 0) {
    const text = functionNames.map((name) => `globalThis.${name} = ${name};`).join(' ');
    edits.push({ start: directivesEnd, end: directivesEnd, text: directivesEnd === 0 ? text : `; ${text}` });
  }
  edits.push({ start: source.length, end: source.length, text: wrapper.end });
  return { ...applyEdits(source, edits), stepped, declaredNames: [...declaredNames] };
}

function parseCell(parser, source) {
  return parser.parse(source, PARSE_OPTIONS);
}

/** Replaces a range by spaces, keeping its line breaks. */
function blank(source, start, end) {
  return { start, end, text: source.slice(start, end).replace(/[^\n]/g, ' ') };
}

function declarationToAssignment(source, node, edits, declaredNames, position) {
  const keywordEnd = node.start + node.kind.length;
  for (const declarator of node.declarations) {
    for (const name of patternNames(declarator.id)) declaredNames.add(name);
    if (declarator.init === null && node.kind === 'let' && position !== 'for-left') {
      edits.push({ start: declarator.id.end, end: declarator.id.end, text: ' = undefined' });
    }
  }
  if (position === 'for-left') {
    // `for (var x of xs)`: the binding alone is a valid assignment target.
    edits.push(blank(source, node.start, keywordEnd));
    return;
  }
  // `void (...)` is an expression wherever a declaration can stand (a statement, a for
  // initialiser), cannot continue the previous line, and parenthesises object patterns.
  edits.push({ start: node.start, end: keywordEnd, text: 'void (' });
  const last = node.declarations[node.declarations.length - 1];
  edits.push({ start: last.end, end: last.end, text: ')' });
}

function patternNames(pattern, names = []) {
  if (pattern === null) return names;
  switch (pattern.type) {
    case 'Identifier':
      names.push(pattern.name);
      break;
    case 'ObjectPattern':
      for (const property of pattern.properties)
        patternNames(property.type === 'RestElement' ? property : property.value, names);
      break;
    case 'ArrayPattern':
      for (const element of pattern.elements) patternNames(element, names);
      break;
    case 'RestElement':
      patternNames(pattern.argument, names);
      break;
    case 'AssignmentPattern':
      patternNames(pattern.left, names);
      break;
  }
  return names;
}

function importToAssignment(source, node, declaredNames, awaitKeyword) {
  const load = `(${awaitKeyword} ${LOADER}(${JSON.stringify(node.source.value)}))`;
  const parts = [];
  const named = [];
  for (const specifier of node.specifiers) {
    declaredNames.add(specifier.local.name);
    if (specifier.type === 'ImportNamespaceSpecifier') parts.unshift(`${specifier.local.name} = ${load}`);
    else if (specifier.type === 'ImportDefaultSpecifier') named.push(`default: ${specifier.local.name}`);
    else {
      const imported =
        specifier.imported.type === 'Literal' ? JSON.stringify(specifier.imported.value) : specifier.imported.name;
      named.push(`${imported}: ${specifier.local.name}`);
    }
  }
  const namespace = node.specifiers.find((specifier) => specifier.type === 'ImportNamespaceSpecifier');
  if (named.length > 0) parts.push(`{ ${named.join(', ')} } = ${namespace ? namespace.local.name : load}`);
  if (parts.length === 0) parts.push(load);
  const lineBreaks = source.slice(node.start, node.end).split('\n').length - 1;
  return { start: node.start, end: node.end, text: `void (${parts.join(', ')});${'\n'.repeat(lineBreaks)}` };
}

/**
 * Rewrites `var` outside functions below the top level, `import(...)` and `import.meta` anywhere;
 * returns the `await`s outside functions and whether there is a `for await` among them.
 */
function rewriteNested(source, program, edits, declaredNames) {
  const found = { awaits: [], forAwait: false };
  const visit = (node, insideFunction, parent) => {
    switch (node.type) {
      case 'AwaitExpression':
        if (!insideFunction) found.awaits.push(node);
        break;
      case 'ForOfStatement':
        if (node.await && !insideFunction) found.forAwait = true;
        break;
      case 'ImportExpression':
        edits.push({ start: node.start, end: node.start + 'import'.length, text: LOADER });
        break;
      case 'MetaProperty':
        if (node.meta.name === 'import') edits.push({ start: node.start, end: node.end, text: IMPORT_META });
        break;
      case 'VariableDeclaration':
        if (node.kind === 'var' && !insideFunction && parent !== program && parent.type !== 'ExportNamedDeclaration') {
          const forLeft =
            (parent.type === 'ForOfStatement' || parent.type === 'ForInStatement') && parent.left === node;
          declarationToAssignment(source, node, edits, declaredNames, forLeft ? 'for-left' : 'statement');
        }
        break;
    }
    const inside = insideFunction || node.type.includes('Function') || node.type === 'StaticBlock';
    for (const key in node) {
      const value = node[key];
      if (Array.isArray(value)) {
        for (const child of value) if (child !== null && typeof child.type === 'string') visit(child, inside, node);
      } else if (value !== null && typeof value === 'object' && typeof value.type === 'string' && key !== 'parent') {
        visit(value, inside, node);
      }
    }
  };
  visit(program, false, null);
  return found;
}

/** Applies non-overlapping edits; returns the code and a map from its positions (1-based) back to the cell's. */
function applyEdits(source, edits) {
  // At one position: insertions before replacements, and an inner node's closing before an outer one's.
  edits.sort(
    (left, right) =>
      left.start - right.start || left.end - right.end || Number(right.inner ?? 0) - Number(left.inner ?? 0),
  );
  const pieces = [];
  const shifts = new Map(); // line (1-based) → [{ column (generated, 0-based), shift }]
  let position = 0;
  let line = 1;
  let lineStart = 0;
  let generatedLineStart = 0;
  let generatedLength = 0;
  const advance = (text) => {
    pieces.push(text);
    for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1)) {
      line += 1;
      generatedLineStart = generatedLength + index + 1;
    }
    generatedLength += text.length;
  };
  for (const edit of edits) {
    advance(source.slice(position, edit.start));
    lineStart = source.lastIndexOf('\n', edit.start - 1) + 1;
    const originalColumnAfter = edit.end - lineStart;
    advance(edit.text);
    const generatedColumnAfter = generatedLength - generatedLineStart;
    if (!edit.text.includes('\n') && !source.slice(edit.start, edit.end).includes('\n')) {
      if (!shifts.has(line)) shifts.set(line, []);
      shifts.get(line).push({ column: generatedColumnAfter, shift: generatedColumnAfter - originalColumnAfter });
    }
    position = edit.end;
  }
  advance(source.slice(position));
  const mapPosition = (lineNumber, column) => {
    let shift = 0;
    for (const entry of shifts.get(lineNumber) ?? []) if (column - 1 >= entry.column) shift = entry.shift;
    return { line: lineNumber, column: Math.max(1, column - shift) };
  };
  return { code: pieces.join(''), mapPosition };
}
