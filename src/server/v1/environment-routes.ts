/**
 * GET /v1/environments: what sessions can ask for with `environment` — the
 * built environments, for which backends, their size and what they add
 * (packages, wheels, files). Host
 * paths (a root filesystem's directory) are the operator's business and stay
 * out of the answer.
 */
import { z } from 'zod';
import { environmentContents } from '../../environments/contents.js';
import { listEnvironments } from '../../environments/store.js';
import { DEFAULT_ENVIRONMENT_NAME } from '../../environments/types.js';
import type { ServerContext } from '../core/context.js';
import { defineRoute, type RouteSpec } from '../http/route.js';

const BuildSchema = z.object({
  builtAt: z.string().meta({ description: 'ISO 8601.' }),
  sizeBytes: z.number().int().optional(),
});

export const EnvironmentSchema = z.object({
  name: z.string(),
  hash: z.string().meta({ description: 'Content hash of the build.' }),
  builds: z.object({ bubblewrap: BuildSchema.optional(), docker: BuildSchema.optional() }),
  debianPackages: z.array(z.string()),
  pythonPackages: z
    .array(z.string())
    .meta({ description: 'Wheel files, the requirements file (`-r NAME`) and named packages.' }),
  files: z.array(z.string()).meta({ description: 'Where the files it copies in are in the sandbox.' }),
  warmImports: z
    .array(z.string())
    .meta({ description: 'Modules a session starts with imported and bound, as `import NAME` in a first cell would.' }),
  image: z
    .object({
      kind: z.enum(['image', 'dockerfile']),
      reference: z
        .string()
        .optional()
        .meta({ description: 'The image as registered (`repo:tag`); absent for a Dockerfile.' }),
      pythonVersion: z.string(),
      ipythonVersion: z.string(),
      languages: z.array(z.string()),
    })
    .optional()
    .meta({
      description: 'An existing Docker image (`sandcell env add --image`) or a Dockerfile: docker backend only.',
    }),
});

export const EnvironmentListSchema = z.object({
  default: z.string().meta({ description: 'The environment a session gets when it names none (`serve --env`).' }),
  environments: z.array(EnvironmentSchema),
});

export function environmentRoutes(server: ServerContext): RouteSpec<never, never, never>[] {
  const routes = [
    defineRoute({
      method: 'get',
      path: '/v1/environments',
      operationId: 'listEnvironments',
      summary: 'The environments sessions can run in (`environment` on POST /v1/sessions).',
      tags: ['environments'],
      responses: { 200: { description: 'Environments.', json: EnvironmentListSchema } },
      handler: async (c) => {
        const records = await listEnvironments();
        return c.json({
          default: server.options.sessionOptions.environmentName ?? DEFAULT_ENVIRONMENT_NAME,
          environments: records.map((record) => ({
            name: record.name,
            hash: record.hash,
            builds: Object.fromEntries(
              Object.entries(record.builds).map(([backend, build]) => [
                backend,
                {
                  builtAt: build?.builtAt ?? '',
                  ...(build?.sizeBytes === undefined ? {} : { sizeBytes: build.sizeBytes }),
                },
              ]),
            ),
            ...environmentContents(record.description),
            warmImports: record.description.warmImports,
            ...(record.image
              ? {
                  image: {
                    kind: record.image.kind,
                    ...(record.image.kind === 'image' ? { reference: record.image.source } : {}),
                    pythonVersion: record.image.pythonVersion,
                    ipythonVersion: record.image.ipythonVersion,
                    languages: record.image.languages,
                  },
                }
              : {}),
          })),
        });
      },
    }),
  ];
  return routes as unknown as RouteSpec<never, never, never>[];
}
