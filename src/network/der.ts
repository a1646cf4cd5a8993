/**
 * Just enough DER (X.690) to write an X.509 certificate: the gate makes its per-session authority
 * and the certificates it signs itself, with node:crypto for keys and signatures, so no library
 * and no openssl process is needed. Only the forms certificate.ts uses are here.
 */

/** A tag, its length and its content: the one shape of every DER value. */
export function derValue(tag: number, content: Buffer): Buffer {
  const length = content.length;
  if (length < 0x80) return Buffer.concat([Buffer.from([tag, length]), content]);
  const lengthBytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) lengthBytes.unshift(rest % 256);
  return Buffer.concat([Buffer.from([tag, 0x80 | lengthBytes.length, ...lengthBytes]), content]);
}

export const derSequence = (...items: Buffer[]): Buffer => derValue(0x30, Buffer.concat(items));
export const derSet = (...items: Buffer[]): Buffer => derValue(0x31, Buffer.concat(items));
export const derOctetString = (content: Buffer): Buffer => derValue(0x04, content);
export const derBoolean = (value: boolean): Buffer => derValue(0x01, Buffer.from([value ? 0xff : 0x00]));
export const derUtf8String = (text: string): Buffer => derValue(0x0c, Buffer.from(text, 'utf8'));
/** `[n] EXPLICIT`: a constructed context tag around a whole value. */
export const derExplicit = (tagNumber: number, content: Buffer): Buffer => derValue(0xa0 | tagNumber, content);
/** `[n] IMPLICIT` of a primitive: the context tag replaces the value's own. */
export const derImplicit = (tagNumber: number, content: Buffer): Buffer => derValue(0x80 | tagNumber, content);

/** A non-negative INTEGER from big-endian bytes (a leading zero keeps the sign bit clear). */
export function derUnsignedInteger(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  const first = trimmed[0] ?? 0;
  return derValue(0x02, first & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

export function derSmallInteger(value: number): Buffer {
  return derUnsignedInteger(Buffer.from([value]));
}

/** A BIT STRING with no unused bits (a signature, a key usage byte). */
export function derBitString(content: Buffer, unusedBits = 0): Buffer {
  return derValue(0x03, Buffer.concat([Buffer.from([unusedBits]), content]));
}

export function derObjectIdentifier(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const groups: number[] = [];
    for (let value = arc; ; value = Math.floor(value / 128)) {
      groups.unshift((value % 128) | (groups.length > 0 ? 0x80 : 0));
      if (value < 128) break;
    }
    bytes.push(...groups);
  }
  return derValue(0x06, Buffer.from(bytes));
}

/** UTCTime up to 2049, GeneralizedTime after, as RFC 5280 says, to the second. */
export function derTime(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-11-23T19:29:28.123Z
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  if (date.getUTCFullYear() < 2050) return derValue(0x17, Buffer.from(digits.slice(2), 'ascii'));
  return derValue(0x18, Buffer.from(digits, 'ascii'));
}
