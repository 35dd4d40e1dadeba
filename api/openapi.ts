/** The OpenAPI 3.0 document, generated from the route declarations and their zod schemas. */
import { z } from 'zod';
import { ErrorResponseSchema } from '../common/api';
import type { RouteSpec } from './route';

type Json = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { target: 'openapi-3.0', io, unrepresentable: 'any' }) as Json;
  delete out.$schema;
  delete out.$id;
  return out;
}

const toOpenApiPath = (p: string) => p.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function parameters(route: RouteSpec): Json[] {
  const list: Json[] = [];
  for (const [where, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    if (!schema) continue;
    const js = jsonSchema(schema, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, prop] of Object.entries(js.properties ?? {})) {
      const { description, ...rest } = prop as Json;
      list.push({
        name,
        in: where,
        required: where === 'path' || (js.required ?? []).includes(name),
        schema: rest,
        ...(description ? { description } : {}),
      });
    }
  }
  return list;
}

const RETRY_AFTER_HEADER: Json = {
  description: 'seconds to wait before trying again',
  required: true,
  schema: { type: 'integer', minimum: 0 },
};

export const STANDARD_ERRORS: Record<number, string> = {
  400: 'invalid request: the message names the field and why',
  401: 'missing or wrong bearer token',
  403: 'a Host this API does not serve, or (changing something) an Origin other than its own',
  404: 'no such session or task',
  409: 'conflicts with the current state (for example a decision for an interrupt that is not pending)',
  413: 'request body too large',
  415: 'a POST or PATCH without content-type: application/json',
};

/** The 503 every route that calls Temporal may answer (see TemporalCalls). */
export const TEMPORAL_DOWN = {
  503: { description: 'temporal_unavailable: Temporal is unreachable or did not answer in time (see Retry-After)' },
};
export const TEMPORAL_DOWN_OR_NO_WORKER = {
  503: {
    description:
      'temporal_unavailable: Temporal is unreachable or did not answer in time; no_worker: no worker is polling ' +
      'the task queue, or none answered in time; not_applied: the message or decision arrived as the workflow ' +
      'changed state and was not applied (see Retry-After)',
  },
};

export function buildOpenApiDocument(
  routes: readonly RouteSpec[],
  info: { version: string; tokenRequired: boolean }
): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    const responses: Record<string, Json> = {};
    for (const [status, spec] of Object.entries(route.responses)) {
      const contentType = spec.contentType ?? 'application/json';
      const content: Record<string, Json> = spec.schema
        ? { [contentType]: { schema: jsonSchema(spec.schema, 'output') } }
        : spec.contentType
          ? { [contentType]: {} }
          : {};
      for (const [type, extra] of Object.entries(spec.also ?? {}))
        content[type] = { schema: { type: 'string', description: extra.description } };
      responses[status] = { description: spec.description, ...(Object.keys(content).length ? { content } : {}) };
    }
    const changes = route.method === 'post' || route.method === 'patch';
    const errorStatuses = new Set([
      ...(route.body || route.params || route.query ? [400] : []),
      ...(route.auth === false ? [] : [401]),
      403,
      ...(changes ? [415] : []),
    ]);
    if (route.body) errorStatuses.add(413);
    for (const s of Object.keys(route.responses).map(Number)) if (STANDARD_ERRORS[s]) errorStatuses.delete(s);
    for (const s of errorStatuses) {
      responses[String(s)] = {
        description: STANDARD_ERRORS[s],
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    for (const [status, spec] of Object.entries(route.responses)) {
      if (Number(status) >= 400 && !spec.schema) {
        responses[status] = {
          description: spec.description,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        };
      }
      // The error handler (and /healthz) send Retry-After with every 503.
      if (status === '503') responses[status].headers = { 'Retry-After': RETRY_AFTER_HEADER };
    }
    const op: Json = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.tags ? { tags: route.tags } : {}),
      parameters: parameters(route),
      responses,
      ...(route.auth === false ? { security: [] } : {}),
    };
    if (route.body) {
      op.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } };
    }
    (paths[toOpenApiPath(route.path)] ??= {})[route.method] = op;
  }
  return {
    openapi: '3.0.3',
    info: {
      title: 'Klea API',
      version: info.version,
      description:
        'Submit tasks to the Klea agent, review plans, answer questions, grant or deny paths, and follow runs. ' +
        'Errors are {error: {code, message, details?}}.',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: info.tokenRequired
            ? 'Required: the server runs with KLEA_API_TOKEN.'
            : 'Not required by this server (no KLEA_API_TOKEN set).',
        },
      },
      schemas: { Error: jsonSchema(ErrorResponseSchema, 'output') },
    },
    paths,
  };
}
