import { getSignature } from 'e2b';
import { describe, expect, it } from 'vitest';
import { SIGNATURE_FORMAT, signatureOf } from './envd-signed-urls.js';

const TOKEN = 'a'.repeat(64);

describe('signed file URLs', () => {
  it('sign as the E2B SDK does, with and without user and expiration', async () => {
    for (const [path, username, operation] of [
      ['/home/user/report.csv', '', 'read'],
      ['notes/ünïcode file.txt', 'root', 'write'],
      ['', '', 'write'],
    ] as const) {
      const sdk = await getSignature({ path, operation, user: username, envdAccessToken: TOKEN });
      expect(signatureOf({ path, username }, operation, TOKEN)).toBe(sdk.signature);
      expect(sdk.signature).toMatch(SIGNATURE_FORMAT);
      const expiring = await getSignature({
        path,
        operation,
        user: username,
        expirationInSeconds: 60,
        envdAccessToken: TOKEN,
      });
      const expiration = String(expiring.expiration);
      expect(signatureOf({ path, username, expiration }, operation, TOKEN)).toBe(expiring.signature);
    }
  });
});
