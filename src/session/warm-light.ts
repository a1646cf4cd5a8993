/**
 * Whether the pool warms sessions without the preload. Each session handed out is replaced by a
 * start, so keeping the warm lists full costs (arrivals per second) × (CPU of a start), summed over
 * the environments: the cores those starts keep busy. When preloaded starts would keep more than a
 * share of the host's cores busy, the host cannot refill the warm lists as fast as they empty (and
 * the users' own code gets what is left), so warm sessions start light: without `preloadModules`,
 * about a third of the CPU (docs/architecture.md, Pool), the modules importing on first use. Once the
 * demand falls well below the share, warm sessions preload again.
 */

/** A preloaded start's CPU until one is measured: bench/start-cost.mjs, numpy, pandas and matplotlib.pyplot at load 12. */
export const INITIAL_PRELOADED_START_CPU_SECONDS = 1.1;
/** A start without the preload, likewise (IPython's own import is most of it). */
export const INITIAL_LIGHT_START_CPU_SECONDS = 0.4;
/**
 * The share of the host's cores that preloaded warm starts may keep busy. Starts queue for the cores:
 * at a utilisation ρ a start waits about ρ/(1−ρ) start times behind others (M/M/1), 1.5 at 0.6, 4 at 0.8
 * and 9 at 0.9, while a burst of a Poisson stream empties the warm list; and the users' code in the
 * sessions handed out (their first imports included) needs the rest.
 */
export const DEFAULT_WARM_LIGHT_CPU_SHARE = 0.6;
/**
 * Preloaded again once the demand is below this part of the share: the measured start cost moves by
 * a third with the host's load, and without the gap a rate near the line would flip the mode back and
 * forth, each flip to preloaded replacing light warm sessions (their CPU thrown away).
 */
export const PRELOAD_AGAIN_BELOW = 0.8;

export interface WarmLightInput {
  /** Arrivals per second × CPU-seconds of a preloaded start, summed over the environments: in cores. */
  preloadedDemandCores: number;
  cores: number;
  share: number;
  /** Whether warm sessions start light now (the decision has a gap between its two ways). */
  lightNow: boolean;
}

export function warmsLight({ preloadedDemandCores, cores, share, lightNow }: WarmLightInput): boolean {
  const budget = share * cores;
  return lightNow ? preloadedDemandCores >= PRELOAD_AGAIN_BELOW * budget : preloadedDemandCores > budget;
}
