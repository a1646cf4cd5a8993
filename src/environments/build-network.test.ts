import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { parseNetworkPolicy } from '../network/index.js';
import type { PackageIndex } from '../network/package-index.js';
import { aptSourceHosts, deb822Uris, oneLineUris, ruleForUri } from './apt-sources.js';
import { buildAllowList } from './build-network.js';
import { parseDescription } from './description.js';

const roots: string[] = [];
/** A resolver that knows no name: nothing is pinned. */
const noAnswers = async (): Promise<string[]> => [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

/** A root filesystem with only the apt sources given. */
async function rootWithSources(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'sandcell-apt-sources-'));
  roots.push(root);
  await mkdir(path.join(root, 'etc/apt/sources.list.d'), { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(root, 'etc/apt', name), text);
  return root;
}

describe("the build's apt sources", () => {
  it('reads hosts from the one-line form, with options, comments and deb-src', () => {
    const text = [
      '# a comment http://ignored.example/',
      'deb http://deb.debian.org/debian bookworm main',
      'deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] https://packages.example.com:8443/apt stable main',
      'deb-src http://security.debian.org/debian-security bookworm-security main # trailing',
    ].join('\n');
    expect(oneLineUris(text)).toEqual([
      'http://deb.debian.org/debian',
      'https://packages.example.com:8443/apt',
      'http://security.debian.org/debian-security',
    ]);
  });

  it('reads URIs from deb822 stanzas, skipping disabled ones and folding continuation lines', () => {
    const text = [
      'Types: deb',
      'URIs: http://deb.debian.org/debian',
      '  mirror+http://mirrors.example.org/list.txt',
      'Suites: bookworm',
      '',
      'Types: deb',
      'URIs: http://disabled.example.org/debian',
      'Enabled: no',
    ].join('\n');
    expect(deb822Uris(text)).toEqual(['http://deb.debian.org/debian', 'mirror+http://mirrors.example.org/list.txt']);
  });

  it('turns URIs into rules: a port only when it is not the default, nothing for local transports', () => {
    expect(ruleForUri('http://deb.debian.org/debian')).toBe('deb.debian.org');
    expect(ruleForUri('https://apt.example.com:8443/x')).toBe('apt.example.com:8443');
    expect(ruleForUri('tor+https://onion.example.org/')).toBe('onion.example.org');
    expect(ruleForUri('file:/srv/mirror')).toBeUndefined();
    expect(ruleForUri('cdrom:[Debian]/')).toBeUndefined();
  });

  it('collects every file of the root filesystem, without repeats', async () => {
    const root = await rootWithSources({
      'sources.list': 'deb http://deb.debian.org/debian bookworm main\n',
      'sources.list.d/debian.sources': 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-updates\n',
      'sources.list.d/extra.list': 'deb https://apt.example.com/ stable main\n',
      'sources.list.d/ignored.save': 'deb http://not-read.example.com/ stable main\n',
    });
    expect(await aptSourceHosts(root)).toEqual(['deb.debian.org', 'apt.example.com']);
  });
});

const PYPI_DEFAULT = { url: 'https://pypi.org/simple', filesHost: 'files.pythonhosted.org' };
/** What this machine's pip might say: its default index, or a mirror. */
const PYPI: PackageIndex = {
  rules: ['pypi.org', 'files.pythonhosted.org'],
  environment: {},
  unreachable: [],
  pipDefault: PYPI_DEFAULT,
};
const MIRROR: PackageIndex = {
  rules: ['mirror.example:8443'],
  environment: { PIP_INDEX_URL: 'https://mirror.example:8443/simple' },
  unreachable: [],
  pipDefault: PYPI_DEFAULT,
};

describe("the build's allow-list", () => {
  it('is the apt hosts, the Python index host, the description and --allow-host', async () => {
    const root = await rootWithSources({ 'sources.list': 'deb http://deb.debian.org/debian bookworm main\n' });
    const description = parseDescription({
      name: 'web',
      python: { packages: ['toolz'], indexUrl: 'https://index.example.com:8443/simple' },
      network: { allow: ['API.example.com', 'host.sandcell.internal:8080'] },
    });
    expect(await buildAllowList(description, root, ['git.example.org'], noAnswers)).toEqual([
      'deb.debian.org',
      'index.example.com:8443',
      'api.example.com',
      'host.sandcell.internal:8080',
      'git.example.org',
    ]);
  });

  it("adds PyPI's hosts when packages are named without an index, and none for local wheels alone", async () => {
    const root = await rootWithSources({});
    const named = parseDescription({ name: 'named', python: { packages: ['toolz'] } });
    expect(await buildAllowList(named, root, [], noAnswers, () => PYPI)).toEqual([
      'pypi.org',
      'files.pythonhosted.org',
    ]);
    // Another index configured for this machine's pip is the build's.
    expect(await buildAllowList(named, root, [], noAnswers, () => MIRROR)).toEqual(['mirror.example:8443']);
    const wheels = parseDescription({ name: 'wheels', python: { wheels: ['tiny.whl'] } });
    expect(await buildAllowList(wheels, root, [], noAnswers)).toEqual([]);
  });

  it('pins the non-public addresses the needed names resolve to now, and only those', async () => {
    const root = await rootWithSources({
      'sources.list': 'deb http://mirror.lan/debian bookworm main\ndeb http://deb.debian.org/debian bookworm main\n',
    });
    const description = parseDescription({
      name: 'pinned',
      python: { packages: ['toolz'], indexUrl: 'http://devpi.lan:3141/root/pypi/simple' },
      network: { allow: ['internal.example.com'] },
    });
    const answers: Record<string, string[]> = {
      'mirror.lan': ['10.1.2.3', 'fd00::5'],
      'deb.debian.org': ['151.101.2.132'],
      'devpi.lan': ['192.168.1.9'],
      'internal.example.com': ['10.9.9.9'],
    };
    const allow = await buildAllowList(description, root, [], async (host) => answers[host] ?? []);
    expect(allow).toEqual([
      'mirror.lan',
      'deb.debian.org',
      'devpi.lan:3141',
      '10.1.2.3',
      '[fd00::5]',
      '192.168.1.9:3141',
      // The description's own rules mean what a session's do: a private answer needs a CIDR rule it writes.
      'internal.example.com',
    ]);
    expect(() => parseNetworkPolicy(allow ?? [])).not.toThrow();
  });

  it("is no network at all for network: 'none'", async () => {
    const root = await rootWithSources({ 'sources.list': 'deb http://deb.debian.org/debian bookworm main\n' });
    const offline = parseDescription({ name: 'offline', network: 'none' });
    expect(await buildAllowList(offline, root)).toBeUndefined();
  });

  it('checks --allow-host like a session option', async () => {
    const root = await rootWithSources({});
    const description = parseDescription({ name: 'plain' });
    await expect(buildAllowList(description, root, ['https://example.com/'])).rejects.toThrow(InvalidInputError);
  });
});

describe("the description's network", () => {
  it('accepts none or an allow-list, lower-cased', () => {
    expect(parseDescription({ name: 'a', network: 'none' }).network).toBe('none');
    expect(parseDescription({ name: 'a', network: { allow: ['Example.com:8080'] } }).network).toEqual({
      allow: ['example.com:8080'],
    });
  });

  it('refuses what a session would refuse, naming the field', () => {
    expect(() => parseDescription({ name: 'a', network: { allow: ['http://example.com/'] } })).toThrow(/network/);
    expect(() => parseDescription({ name: 'a', network: { allow: [] } })).toThrow(/network/);
    expect(() => parseDescription({ name: 'a', network: 'all' })).toThrow(/network/);
    expect(() => parseDescription({ name: 'a', network: { allow: ['example.com'], extra: 1 } })).toThrow(/network/);
  });
});
