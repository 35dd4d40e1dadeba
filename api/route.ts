/**
 * Routes are declared once, as data: method, path, zod schemas for params/query/body and responses, and a
 * handler that receives the parsed values. The same declarations mount the Express routes and generate the
 * OpenAPI document, so the two cannot drift apart.
 */
import type { Request, RequestHandler, Response, Router } from 'express';
import type { z } from 'zod';
import { validationError } from './errors';

type AnyObject = z.ZodType<Record<string, unknown>>;

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** Defaults to application/json. */
  contentType?: string;
  /** Further media types the same response may take (e.g. a server-sent event stream). */
  also?: Record<string, { description: string }>;
}

export interface RouteContext<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  req: Request;
  res: Response;
}

export interface RouteSpec<P = unknown, Q = unknown, B = unknown> {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** Express-style path, e.g. /tasks/:id */
  path: string;
  operationId: string;
  summary: string;
  tags?: string[];
  /** False only for routes open without a token (/healthz). */
  auth?: boolean;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /** The success status the handler's return value is sent with. */
  status?: number;
  responses: Record<number, ResponseSpec>;
  /** Returns the JSON body, or undefined when it wrote the response itself (SSE, HTML). */
  handler: (ctx: RouteContext<P, Q, B>) => Promise<unknown> | unknown;
}

export const defineRoute = <P = Record<string, never>, Q = Record<string, never>, B = undefined>(
  spec: RouteSpec<P, Q, B>
): RouteSpec => spec as unknown as RouteSpec;

function parsePart<T>(where: 'body' | 'query' | 'path', schema: z.ZodType<T> | undefined, value: unknown): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw validationError(where, result.error);
  return result.data;
}

export function mountRoutes(router: Router, routes: readonly RouteSpec[], authenticate: RequestHandler): void {
  for (const route of routes) {
    const run: RequestHandler = async (req, res) => {
      const params = parsePart('path', route.params as AnyObject | undefined, req.params);
      const query = parsePart('query', route.query as AnyObject | undefined, req.query);
      const body = route.body ? parsePart('body', route.body, req.body) : undefined;
      const out = await route.handler({ params, query, body, req, res });
      if (out !== undefined && !res.headersSent) res.status(route.status ?? 200).json(out);
    };
    const chain = route.auth === false ? [run] : [authenticate, run];
    router[route.method](route.path, ...chain);
  }
}
