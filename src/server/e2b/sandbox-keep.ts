/**
 * What an E2B sandbox keeps with its session across a pause (ManagedSession.keep,
 * written into the paused record): its template, tokens, metadata, environment
 * variables, deadline and lifecycle, so a paused sandbox is found, listed and
 * resumed by its E2B id with the same tokens, also by a server started after a
 * restart. Read back through a schema: a record that does not hold this shape
 * is not an E2B sandbox this door can answer for.
 */
import { z } from 'zod';

const TOKEN = /^[0-9a-f]{64}$/;
const Millis = z.number().int().nonnegative().max(8.64e15);

export const Lifecycle = z.object({
  /** What the deadline does: kill the sandbox (E2B's default) or pause it. */
  onTimeout: z.enum(['kill', 'pause']),
  /** Whether sandbox traffic resumes it when it is paused. */
  autoResume: z.boolean(),
});
export type Lifecycle = z.output<typeof Lifecycle>;

/**
 * Who may reach the ports the sandbox serves, and how (E2B's `network.allowPublicTraffic`,
 * `maskRequestHost` and `httpsPorts`). Absent in records older than ports: public, as E2B's default.
 */
export const TrafficPolicy = z.object({
  /** False: a request to a port must carry the sandbox's traffic token (`e2b-traffic-access-token`). */
  public: z.boolean(),
  /** The Host the app sees, `${PORT}` replaced by the port; absent, the name the request came by. */
  maskRequestHost: z.string().min(1).max(256).optional(),
  /** Ports whose app serves TLS itself: reached over TLS (its certificate not checked), served plain. */
  httpsPorts: z.array(z.number().int().min(1).max(65_535)).max(64),
});
export type TrafficPolicy = z.output<typeof TrafficPolicy>;
export const PUBLIC_TRAFFIC: TrafficPolicy = { public: true, httpsPorts: [] };

export const SandboxKeep = z.object({
  e2b: z.literal(1),
  templateId: z.string().min(1).max(256),
  envdAccessToken: z.string().regex(TOKEN),
  trafficAccessToken: z.string().regex(TOKEN),
  envVars: z.record(z.string().max(256), z.string().max(32_768)),
  metadata: z.record(z.string().max(256), z.string().max(2048)),
  /** When it was created (ms, unique within a server): the order of the list. */
  order: Millis,
  startedAt: Millis,
  endAt: Millis,
  /** The timeout it was created with: what a resume by its traffic gives it. */
  timeoutMs: Millis,
  lifecycle: Lifecycle,
  traffic: TrafficPolicy.optional(),
  /** Set while it is paused as E2B's clients see it (pause(), or its deadline with onTimeout 'pause'). */
  pausedAt: Millis.optional(),
});
export type SandboxKeep = z.output<typeof SandboxKeep>;

/** The keep of a record or of a resumed session, if it is an E2B sandbox's. */
export function readKeep(keep: Record<string, unknown> | undefined): SandboxKeep | undefined {
  const parsed = SandboxKeep.safeParse(keep);
  return parsed.success ? parsed.data : undefined;
}
