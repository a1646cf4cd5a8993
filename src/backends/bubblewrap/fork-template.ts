/**
 * Whether a session's sandbox starts by fork, from this root filesystem's
 * warm session template (zygote.ts), or by exec; and the template itself,
 * booted when forks pay for it and kept while it lives. In `auto` a fork
 * that fails, or a template that cannot boot, makes every later start exec,
 * and doctor says why.
 */
import { DEFAULT_PRELOAD_MODULES } from '../../kernel/index.js';
import { DEFAULT_LIMITS } from '../limits.js';
import { sandboxEnvironment } from '../sandbox-environment.js';
import type { BubblewrapHostReport } from './host-preparation.js';
import { isRoot } from './host-setup.js';
import { type BubblewrapBackendOptions, startMode } from './options.js';
import { Zygote } from './zygote.js';

export class ForkTemplate {
  /** This root's session template while it boots. */
  private template?: Promise<Zygote>;
  /** The template, once it is ready (`auto` forks only from a ready one, and never waits for one). */
  private readyTemplate?: Zygote;
  /** Sandboxes started so far: in `auto`, a process that starts one (a CLI run) never pays for a template. */
  private starts = 0;
  /** Why forking was given up (in `auto`), for doctor. */
  private forkUnavailable?: string;

  constructor(private readonly options: BubblewrapBackendOptions) {}

  /**
   * The session template to fork from, or undefined to exec. `fork` starts
   * the template at first use (and again after it died) and waits for it.
   * `auto` starts it at the second start of the process (one start alone, a
   * CLI run, is cheaper by exec than a template's imports) and execs until it
   * is ready; a template that cannot start makes it exec from then on, and
   * doctor says why.
   */
  async forStart(
    prepared: BubblewrapHostReport,
    kernelOptions: Record<string, unknown> | undefined,
  ): Promise<Zygote | undefined> {
    const mode = startMode(this.options);
    if (mode === 'exec' || this.forkUnavailable !== undefined) return undefined;
    this.starts++;
    if (this.readyTemplate?.alive) return this.readyTemplate;
    if (mode === 'fork') return this.start(prepared, kernelOptions);
    if (this.starts >= 2) this.start(prepared, kernelOptions).catch(() => undefined);
    return undefined;
  }

  /** A fork failed in `auto`: this start and every later one exec, and doctor says `reason`. */
  giveUp(reason: string): void {
    this.forkUnavailable = reason;
    this.readyTemplate?.close();
  }

  /** How this backend's sessions start, and why not by fork when they do not (for doctor). */
  startPath(): { mode: 'fork' | 'exec'; reason?: string } {
    const mode = startMode(this.options);
    if (mode === 'exec') return { mode: 'exec', reason: 'SANDCELL_START=exec' };
    if (!isRoot()) return { mode: 'exec', reason: "forking needs root (each fork becomes its session's own host uid)" };
    if (this.forkUnavailable !== undefined) return { mode: 'exec', reason: this.forkUnavailable };
    return { mode: 'fork' };
  }

  /** Starts a template, or gives the one booting (concurrent starts share it). */
  private start(prepared: BubblewrapHostReport, kernelOptions: Record<string, unknown> | undefined): Promise<Zygote> {
    if (this.template) return this.template;
    const warmImports = Array.isArray(kernelOptions?.warmImports) ? (kernelOptions.warmImports as string[]) : [];
    const template = Zygote.start({
      bwrapPath: prepared.bwrapPath,
      systemRoot: prepared.systemRoot,
      runtime: prepared.runtime,
      seccompFilter: prepared.seccompFilter,
      environment: sandboxEnvironment({ kernelOptions: {}, threads: DEFAULT_LIMITS.cpus }),
      warmModules: [...new Set([...DEFAULT_PRELOAD_MODULES, ...warmImports])],
    });
    this.template = template;
    template.then(
      (ready) => {
        this.template = undefined;
        this.readyTemplate = ready;
      },
      (error: unknown) => {
        this.template = undefined;
        if (startMode(this.options) === 'auto') {
          this.forkUnavailable = error instanceof Error ? error.message : String(error);
        }
      },
    );
    return template;
  }
}
