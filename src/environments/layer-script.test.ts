import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseDescription } from './description.js';
import { layerScript, shellQuote } from './layer-script.js';

describe('the layer script', () => {
  it('quotes every word the description gives, so none is run as shell', () => {
    const hostile = `x'; touch /tmp/pwned; echo '`;
    expect(execFileSync('sh', ['-c', `printf %s ${shellQuote(hostile)}`], { encoding: 'utf8' })).toBe(hostile);
  });

  it('installs Debian packages, then files, then Python packages with pip (added for them), then setup', () => {
    const script = layerScript(
      parseDescription({
        name: 'ml',
        debianPackages: ['python3-toolz'],
        python: { wheels: ['dist/tiny-1.0-py3-none-any.whl'] },
        files: [{ source: 'data', target: '/usr/share/ml-data' }],
        setup: ['python3 -c "print(1)"'],
      }),
    );
    const order = [
      'apt-get',
      "'python3-toolz' 'python3-pip'",
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

  it('runs no package manager for a layer of files and variables only', () => {
    const script = layerScript(parseDescription({ name: 'plain', env: { A: '1' } }));
    expect(script).not.toContain('apt-get');
    expect(script).not.toContain('pip');
  });
});
