/** A one-line spinner on a terminal (nothing when not a terminal), for waits the user should see. */
const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export interface Status {
  update(text: string): void;
  stop(): void;
}

export function startStatus(stream: NodeJS.WriteStream | undefined, text: string): Status {
  if (!stream?.isTTY) return { update: () => undefined, stop: () => undefined };
  let frame = 0;
  let label = text;
  const started = Date.now();
  const draw = () => {
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    stream.write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${label} (${seconds}s)`);
  };
  // Only show up when the wait is long enough to notice.
  const timer = setInterval(draw, 100);
  timer.unref();
  return {
    update(next) {
      label = next;
    },
    stop() {
      clearInterval(timer);
      if (frame > 0) stream.write('\r\x1b[2K');
    },
  };
}
