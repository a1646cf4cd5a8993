/**
 * `doctor`'s view of custom environments: each one built, for which
 * backends, its size and what it adds; one built on another runtime (an
 * older sandcell) still runs, but misses the current kernel, so it says to
 * rebuild.
 */
import { buildsLine, contentsLine } from '../environments/contents.js';
import { defaultEnvironmentStore, listEnvironments } from '../environments/store.js';
import { runtimeVersion } from '../image/recipe.js';
import { describeImage } from './environment-image-line.js';

type Add = (level: 'ok' | 'warn' | 'fail', title: string, detail?: string) => void;

export async function checkEnvironments(add: Add): Promise<void> {
  const records = await listEnvironments();
  if (records.length === 0) {
    add('ok', `environments: none built (${defaultEnvironmentStore()}); \`sandcell env build FILE\` adds one`);
    return;
  }
  for (const record of records) {
    const builds = buildsLine(record.builds);
    const detail = contentsLine(record.description);
    if (record.image) {
      // Its kernel is mounted from this sandcell at each session start: never out of date.
      add('ok', `environment ${record.name} (${record.hash}): ${builds} only`, describeImage(record.image));
    } else if (record.runtimeVersion === runtimeVersion()) {
      add('ok', `environment ${record.name} (${record.hash}): ${builds}`, detail);
    } else {
      add(
        'warn',
        `environment ${record.name} (${record.hash}): built on runtime ${record.runtimeVersion}, not this sandcell's ${runtimeVersion()}`,
        `Rebuild it: sandcell env build <its description file>.${detail ? `\n${detail}` : ''}`,
      );
    }
  }
}
