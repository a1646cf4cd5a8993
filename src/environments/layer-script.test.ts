import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseDescription } from './description.js';
import { fetchScript, layerScript, resolveScript, shellQuote } from './layer-script.js';

describe('the layer script', () => {
  it('quotes every word the description gives, so none is run as shell', () => {
    const hostile = `x'; touch /tmp/pwned; echo '`;
    expect(execFileSync('sh', ['-c', `printf %s ${shellQuote(hostile)}`], { encoding: 'utf8' })).toBe(hostile);
  });

  it('installs Debian packages, then files, then Python packages with pip (fetched only if missing), then setup', () => {
    const script = layerScript(
      parseDescription({
        name: 'ml',
        debianPackages: ['python3-toolz'],
        python: { wheels: ['dist/tiny-1.0-py3-none-any.whl'] },
        files: [{ source: 'data', target: '/usr/share/ml-data' }],
        setup: ['python3 -c "print(1)"'],
      }),
      { gate: true },
    );
    const order = [
      'sandcell-step: starting the network forwarder',
      'apt-get',
      "'python3-toolz'",
      'python3 -m pip --version',
      "cp -R --no-preserve=ownership '/var/tmp/sandcell-environment/inputs/data/.' '/usr/share/ml-data'",
      'python3 -m pip install',
      'sh -c \'python3 -c "print(1)"\'',
      'rm -rf /var/lib/apt/lists/*',
    ];
    const positions = order.map((text) => script.indexOf(text));
    expect(positions.every((position) => position >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(script).toContain("'/var/tmp/sandcell-environment/inputs/dist/tiny-1.0-py3-none-any.whl'");
    expect(script).toContain('DEB_PYTHON_INSTALL_LAYOUT=deb_system');
    expect(() => execFileSync('sh', ['-n'], { input: script })).not.toThrow();
  });

  it('points apt, pip and the setup commands at the forwarder, with no NO_PROXY to slip past it', () => {
    const description = parseDescription({
      name: 'web',
      debianPackages: ['python3-toolz'],
      python: { packages: ['toolz'] },
      setup: ['curl -fsS http://127.0.0.1:8080/ -o /usr/share/web.txt'],
    });
    const script = layerScript(description, { gate: true });
    expect(script).toContain(
      '-o Acquire::http::Proxy=http://127.0.0.1:3128 -o Acquire::https::Proxy=http://127.0.0.1:3128',
    );
    expect(script).toContain("export HTTPS_PROXY='http://127.0.0.1:3128'");
    expect(script).toContain("export PIP_PROXY='http://127.0.0.1:3128'");
    expect(script).not.toMatch(/no_proxy/i);
    expect(script).not.toContain('--no-index');
    expect(() => execFileSync('sh', ['-n'], { input: script })).not.toThrow();
  });

  it("installs packages named without an index from the index this machine's pip uses; indexUrl wins", () => {
    const pipEnvironment = { PIP_INDEX_URL: 'https://mirror.example:8443/simple' };
    const named = parseDescription({ name: 'named', python: { packages: ['toolz'] } });
    expect(layerScript(named, { gate: true, pipEnvironment })).toContain(
      "PIP_INDEX_URL='https://mirror.example:8443/simple' DEB_PYTHON_INSTALL_LAYOUT=deb_system python3 -m pip install",
    );
    const indexed = parseDescription({
      name: 'indexed',
      python: { packages: ['toolz'], indexUrl: 'https://own.example/simple' },
    });
    const script = layerScript(indexed, { gate: true, pipEnvironment });
    expect(script).not.toContain('mirror.example');
    expect(script).toContain("--index-url 'https://own.example/simple'");
  });

  it('offline, starts no forwarder and lets pip read local files only', () => {
    const description = parseDescription({ name: 'offline', network: 'none', python: { wheels: ['tiny.whl'] } });
    const script = layerScript(description, { gate: false });
    expect(script).not.toContain('forwarder');
    expect(script).not.toContain('PROXY');
    expect(script).toContain('--no-index');
  });

  it('runs no package manager for a layer of files and variables only', () => {
    const script = layerScript(parseDescription({ name: 'plain', env: { A: '1' } }), { gate: true });
    expect(script).not.toContain('apt-get');
    expect(script).not.toContain('pip');
  });

  it('with a lock, installs exactly its files by hash from the staged cache, then the rest offline', () => {
    const description = parseDescription({
      name: 'locked',
      python: { requirements: 'requirements.txt', wheels: ['own-1.0-py3-none-any.whl'] },
    });
    const script = layerScript(description, { gate: true, locked: { files: 2 } });
    const exact =
      "--no-index --no-deps --require-hashes --find-links '/var/tmp/sandcell-environment/wheelhouse' -r '/var/tmp/sandcell-environment/python.lock'";
    const rest =
      "--no-index --find-links '/var/tmp/sandcell-environment/wheelhouse' -r '/var/tmp/sandcell-environment/inputs/requirements.txt'";
    expect(script.indexOf(exact)).toBeGreaterThan(0);
    expect(script.indexOf(rest)).toBeGreaterThan(script.indexOf(exact));
    expect(script).toContain("'/var/tmp/sandcell-environment/inputs/own-1.0-py3-none-any.whl'");
    // A lock with no files from the index: nothing to install by hash, and still nothing fetched.
    const empty = layerScript(description, { gate: true, locked: { files: 0 } });
    expect(empty).not.toContain('--require-hashes');
    expect(empty).toContain(rest);
    expect(() => execFileSync('sh', ['-n'], { input: script })).not.toThrow();
  });

  it("resolves after the Debian packages, and downloads what pip's report names; fetching checks the lock's hashes", () => {
    const description = parseDescription({
      name: 'resolve',
      debianPackages: ['python3-toolz'],
      python: { packages: ['yaspin'] },
    });
    const script = resolveScript(description, { gate: true });
    const order = [
      "install -y --no-install-recommends 'python3-toolz'",
      "--dry-run --quiet --report '/var/tmp/sandcell-environment/report.json'",
      "'yaspin'",
      'python3 -m pip download',
    ];
    const positions = order.map((text) => script.indexOf(text));
    expect(positions.every((position) => position >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(() => execFileSync('sh', ['-n'], { input: script })).not.toThrow();
    const fetch = fetchScript(description, { gate: true });
    expect(fetch).toContain("--no-deps --require-hashes --quiet -d '/var/tmp/sandcell-environment/wheelhouse'");
    expect(fetch).not.toContain('apt-get');
    expect(() => execFileSync('sh', ['-n'], { input: fetch })).not.toThrow();
  });

  it("trusts the host's CA bundle (staged) for pip, curl and git when the build has network", () => {
    const description = parseDescription({ name: 'ca', python: { packages: ['toolz'] } });
    const script = layerScript(description, { gate: true });
    for (const name of ['PIP_CERT', 'SSL_CERT_FILE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO']) {
      expect(script).toContain(`export ${name}='/var/tmp/sandcell-environment/ca-bundle.pem'`);
    }
    expect(layerScript(description, { gate: false })).not.toContain('ca-bundle.pem');
  });
});
