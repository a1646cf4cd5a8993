import { describe, expect, it } from 'vitest';
import { createScriptedBackend } from '../backends/scripted/index.js';
import { InvalidInputError } from '../errors.js';
import { CLI_LIMIT_NAMES, SERVER_LIMIT_NAMES } from './limit-names.js';
import { createSession } from './session.js';

describe('limit errors say how to raise the limit where the session was made', () => {
  it('a file over fileTransferBytes: in bytes or KiB, naming the option, the flag or the operator', async () => {
    const cases = [
      [undefined, 'raise the option `fileTransferBytes`.'],
      [CLI_LIMIT_NAMES, 'raise it with --max-upload (e.g. --max-upload 256M).'],
      [SERVER_LIMIT_NAMES, "the server's operator sets it for every session."],
    ] as const;
    for (const [limitNames, advice] of cases) {
      const session = await createSession({
        backend: createScriptedBackend(),
        fileTransferBytes: 1024,
        ...(limitNames ? { limitNames } : {}),
      });
      try {
        const write = session.files.write('big.bin', new Uint8Array(3 * 1024));
        await expect(write).rejects.toThrow(InvalidInputError);
        await expect(write).rejects.toThrow(
          `big.bin is 3 KiB, over 1 KiB, the most a file moved in or out of the session may be; ${advice}`,
        );
      } finally {
        await session.close();
      }
    }
  });
});
