/**
 * Discord rate-limits message edits, and a streamed answer changes many times
 * a second: the bot applies the latest state at most once per interval. An
 * update while one is being applied is folded into the next.
 */
export class EditThrottle {
  private lastRunAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private dirty = false;

  constructor(
    private readonly apply: () => Promise<void>,
    private readonly intervalMs = 1000,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** Asks for the latest state to be applied, within the interval. */
  request(): void {
    this.dirty = true;
    if (this.timer || this.running) return;
    const wait = Math.max(0, this.lastRunAt + this.intervalMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.run();
    }, wait);
  }

  private async run(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    this.lastRunAt = Date.now();
    this.running = this.apply().catch(this.onError);
    await this.running;
    this.running = undefined;
    if (this.dirty) this.request();
  }

  /** Applies the latest state now (after any apply in progress), and stops the timer. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    this.dirty = true;
    await this.run();
  }
}
