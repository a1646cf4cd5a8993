/**
 * A tiny pure-Python package as a wheel, written during a test (there is no
 * PyPI here, and no `python -m build`): a wheel is a zip with the package,
 * METADATA, WHEEL and a RECORD of hashes.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const WRITER = String.raw`
import base64, hashlib, sys, zipfile
directory, name, version, source = sys.argv[1:5]
dist = f"{name}-{version}.dist-info"
files = {
    f"{name}/__init__.py": source,
    f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: sandcell-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
def digest(text):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
record = "".join(f"{path},{digest(text)},{len(text.encode())}\n" for path, text in files.items()) + f"{dist}/RECORD,,\n"
wheel = f"{directory}/{name}-{version}-py3-none-any.whl"
with zipfile.ZipFile(wheel, "w") as archive:
    for path, text in {**files, f"{dist}/RECORD": record}.items():
        # A fixed date: the same package is the same bytes, so an environment naming it is unchanged.
        archive.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), text)
print(wheel)
`;

/** Writes `<name>-<version>-py3-none-any.whl` into `directory`; returns its path. */
export function writeTinyWheel(directory: string, name: string, version: string, source: string): string {
  const wheel = execFileSync('python3', ['-c', WRITER, directory, name, version, source], { encoding: 'utf8' }).trim();
  return path.resolve(wheel);
}
