/** Builds the OpenAPI 3.1 document from the route table and its zod schemas (JSON Schema 2020-12). */
import { type ZodType, z } from 'zod';
import type { RouteSpec } from './route.js';

type JsonSchema = Record<string, unknown>;

function toSchema(schema: ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
  }) as JsonSchema;
  return rest;
}

function parameters(schema: ZodType | undefined, location: 'path' | 'query'): JsonSchema[] {
  if (!schema) return [];
  const json = toSchema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...propertySchema } = property as JsonSchema & { description?: string };
    return {
      name,
      in: location,
      required: location === 'path' || (json.required ?? []).includes(name),
      ...(description ? { description } : {}),
      schema: propertySchema,
    };
  });
}

export interface DocumentInfo {
  title: string;
  version: string;
  description: string;
}

export function buildOpenApiDocument(routes: RouteSpec<never, never, never>[], info: DocumentInfo): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes as unknown as RouteSpec[]) {
    const operation: JsonSchema = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      responses: Object.fromEntries(
        Object.entries(route.responses).map(([status, response]) => {
          const content: Record<string, JsonSchema> = {};
          if (response.json) content['application/json'] = { schema: toSchema(response.json, 'output') };
          for (const type of response.contentTypes ?? []) {
            content[type] = {
              schema: type.startsWith('text/') ? { type: 'string' } : { type: 'string', contentMediaType: type },
            };
          }
          return [status, { description: response.description, ...(Object.keys(content).length ? { content } : {}) }];
        }),
      ),
    };
    if (route.body) {
      const content: Record<string, JsonSchema> = {};
      if (route.body.json) content['application/json'] = { schema: toSchema(route.body.json, 'input') };
      if (route.body.multipart) content['multipart/form-data'] = { schema: toSchema(route.body.multipart, 'input') };
      if (route.body.raw) content['application/octet-stream'] = { schema: { type: 'string', format: 'binary' } };
      operation.requestBody = { required: route.body.required ?? false, content };
    }
    if (route.authenticated !== false) operation.security = [{ bearer: [] }];
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, JsonSchema>)[route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info,
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'A sandcell API key (SANDCELL_API_KEYS).' },
      },
    },
    paths,
  };
}
