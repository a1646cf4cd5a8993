/**
 * README.md and docs/ hold together: every block has its marker and an ID of
 * its own (test/support/readme.ts says which file and line when not), every
 * guide under docs/ is linked from the README (so its blocks are found and run
 * by test/readme*.test.ts), and every relative link in README.md and docs/*.md
 * points to a file that exists and, with a `#fragment`, to a heading there
 * (GitHub's anchors). Nothing runs: this is quick.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { DESIGN_DOCS, readmeBlocks, readmeFiles, root } from './support/readme.js';

/** Every Markdown file whose links are checked: README.md and all of docs/*.md. */
function markdownFiles(): string[] {
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs.sort()];
}

/** The text outside fenced blocks and inline code, line by line (numbers kept). */
function prose(file: string): { text: string; line: number }[] {
  const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
  const out: { text: string; line: number }[] = [];
  let fenced = false;
  lines.forEach((text, index) => {
    if (/^```/.test(text)) {
      fenced = !fenced;
      return;
    }
    if (!fenced) out.push({ text: text.replace(/`[^`]*`/g, ''), line: index + 1 });
  });
  return out;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  let fenced = false;
  for (const line of readFileSync(path.join(root, file), 'utf8').split('\n')) {
    if (/^```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : line.match(/^#{1,6} (.*)$/)?.[1];
    if (heading == null) continue;
    const slug = heading
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .trim()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const seen = counts.get(slug) ?? 0;
    counts.set(slug, seen + 1);
    anchors.add(seen === 0 ? slug : `${slug}-${seen}`);
  }
  return anchors;
}

/** The relative links of a file: [text](target) and ![alt](target), outside code. */
function linksOf(file: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  for (const { text, line } of prose(file)) {
    for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1] as string;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      links.push({ target, line });
    }
  }
  return links;
}

it('every block of README.md and docs/ has a marker and an ID used once', () => {
  const blocks = readmeBlocks(); // throws naming the file and line of a bad block
  expect(blocks.length).toBeGreaterThan(0);
  expect(blocks.some((block) => block.file !== 'README.md')).toBe(true);
});

it('the design documents exist, and every guide under docs/ is linked from README.md', () => {
  for (const file of DESIGN_DOCS) expect(existsSync(path.join(root, file)), file).toBe(true);
  const linked = new Set(linksOf('README.md').map(({ target }) => path.normalize(target.split('#')[0] as string)));
  const unlinked = readmeFiles().filter((file) => file !== 'README.md' && !linked.has(file));
  expect(unlinked).toEqual([]);
});

it('every relative link in README.md and docs/*.md points to a file, and an anchor to a heading there', () => {
  const broken: string[] = [];
  for (const file of markdownFiles()) {
    for (const { target, line } of linksOf(file)) {
      const [pathPart, fragment] = target.split('#') as [string, string | undefined];
      const resolved = pathPart === '' ? file : path.normalize(path.join(path.dirname(file), decodeURI(pathPart)));
      if (resolved.startsWith('..') || !existsSync(path.join(root, resolved))) {
        broken.push(`${file}:${line}: ${target} (no ${resolved})`);
        continue;
      }
      if (fragment !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(fragment)) {
        broken.push(`${file}:${line}: ${target} (no heading #${fragment} in ${resolved})`);
      }
    }
  }
  expect(broken).toEqual([]);
});
