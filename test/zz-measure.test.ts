import { it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { RawSandbox } from './support/raw-sandbox.js';

function summary(label: string, samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]?.toFixed(3);
  return `${label}: median ${at(0.5)} ms, p10 ${at(0.1)}, p90 ${at(0.9)} (n=${samples.length})`;
}

it('measure', async () => {
  const raw = await RawSandbox.open(createBubblewrapBackend());
  await raw.ready();
  const lines: string[] = [];
  for (const [language, code] of [['python', '1+1'], ['bash', 'true'], ['r', '1+1']] as const) {
    const creates: number[] = [];
    if (language !== 'python') {
      for (let i = 0; i < 5; i++) {
        const t = performance.now();
        await raw.request({ type: 'context-create', context: `${language}${i}`, language }, 60_000);
        creates.push(performance.now() - t);
      }
      lines.push(summary(`${language} context-create (cold start)`, creates));
    }
    const context = language === 'python' ? undefined : `${language}0`;
    for (let i = 0; i < 20; i++) await raw.execute(code, context);
    const warm: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      await raw.execute(code, context);
      warm.push(performance.now() - t);
    }
    lines.push(summary(`${language} warm ${code}`, warm));
  }
  console.log(lines.join('\n'));
  await raw.close();
}, 300_000);
