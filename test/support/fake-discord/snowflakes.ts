/**
 * Discord ids: snowflakes whose top bits are milliseconds since Discord's epoch, so discord.js's
 * `createdAt` getters read a sensible time. Strictly increasing, as Discord's are within one worker.
 */
const DISCORD_EPOCH_MS = 1_420_070_400_000n;

export type NextSnowflake = () => string;

export function createSnowflakes(): NextSnowflake {
  let last = 0n;
  return () => {
    const candidate = (BigInt(Date.now()) - DISCORD_EPOCH_MS) << 22n;
    last = candidate > last ? candidate : last + 1n;
    return last.toString();
  };
}
