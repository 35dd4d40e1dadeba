/**
 * Temporal's codec-server protocol, so people can read encrypted history: the Temporal UI (its codec endpoint,
 * which `make start` sets) and the Temporal CLI (`--codec-endpoint`) send a history's payloads to
 * `POST /codec/decode` and get them back in plaintext; `POST /codec/encode` seals payloads they send (a signal
 * typed into the UI). Both take and answer `{payloads: [{metadata: {k: base64}, data: base64}]}`.
 *
 * The routes exist only when a payload key is set. They carry the API's bearer token like every other route,
 * and answer the Temporal UI's origin (`temporal.ui_url`) with CORS, since the UI calls them from the browser.
 */
import express, { type Express, type RequestHandler } from 'express';
import type { Payload } from '@temporalio/common';
import { CodecPayloadsSchema, type CodecPayloads } from '../common/api';
import type { Config } from '../common/config';
import { type AesGcmPayloadCodec, PayloadKeyError, payloadCodecFor } from '../runtime/payload-codec';
import { ApiError } from './errors';
import { defineRoute, type ResponseSpec, type RouteSpec } from './route';

/**
 * A request may carry a whole workflow result or a session's carried-over memory, which can exceed the API's
 * usual body limit; Temporal refuses payloads over 2 MiB, and base64 makes them a third larger.
 */
export const CODEC_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** What the Temporal UI sends: its JSON body, the user's token when set up to pass it, and the namespace. */
const ALLOWED_HEADERS = 'content-type, authorization, x-namespace';

const fromJson = ({ payloads }: CodecPayloads): Payload[] =>
  payloads.map((p) => ({
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    data: Buffer.from(p.data ?? '', 'base64'),
  }));

const toJson = (payloads: Payload[]): CodecPayloads => ({
  payloads: payloads.map((p) => ({
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')])
    ),
    data: Buffer.from(p.data ?? []).toString('base64'),
  })),
});

const PAYLOAD_KEY_ERROR = {
  description:
    'payload_key: a payload is encrypted with a key id this API does not have, or does not decrypt with its key ' +
    '(the message names the key id)',
};

function codecRoutes(codec: AesGcmPayloadCodec): RouteSpec[] {
  const route = (op: 'encode' | 'decode', summary: string) => {
    const responses: Record<number, ResponseSpec> = {
      200: { description: `the payloads, ${op}d, in the order sent`, schema: CodecPayloadsSchema },
      403: { description: "forbidden_origin: the request's Origin is not the Temporal UI's (temporal.ui_url)" },
    };
    if (op === 'decode') responses[422] = PAYLOAD_KEY_ERROR;
    return defineRoute({
      method: 'post',
      path: `/codec/${op}`,
      operationId: `codec_${op}`,
      summary,
      tags: ['codec'],
      body: CodecPayloadsSchema,
      responses,
      handler: async ({ body }) => {
        try {
          return toJson(await codec[op](fromJson(body)));
        } catch (err) {
          if (err instanceof PayloadKeyError) throw new ApiError(422, 'payload_key', err.message, { keyId: err.keyId });
          throw err;
        }
      },
    });
  };
  return [
    route('decode', "Temporal's codec server: decrypt payloads (for the Temporal UI and CLI)"),
    route('encode', "Temporal's codec server: encrypt payloads with the current key"),
  ];
}

/**
 * CORS for the Temporal UI's origin only: a preflight from it is answered with what the UI sends; one from any
 * other origin is refused, as is a request from another origin (a browser page elsewhere has no business here).
 */
function uiCors(uiUrl: string): RequestHandler {
  const uiOrigin = new URL(uiUrl).origin;
  return (req, res, next) => {
    const origin = req.get('origin');
    res.vary('Origin');
    if (origin !== undefined && origin !== uiOrigin) {
      next(
        new ApiError(
          403,
          'forbidden_origin',
          `origin ${origin} may not call the codec endpoint: only the Temporal UI's (${uiOrigin}, from temporal.ui_url)`
        )
      );
      return;
    }
    if (origin !== undefined) {
      res.set({
        'access-control-allow-origin': uiOrigin,
        // The UI's "include cross-origin credentials" setting makes its requests credentialed.
        'access-control-allow-credentials': 'true',
      });
    }
    if (req.method === 'OPTIONS') {
      res
        .status(204)
        .set({
          'access-control-allow-methods': 'POST, OPTIONS',
          'access-control-allow-headers': ALLOWED_HEADERS,
          'access-control-max-age': '600',
        })
        .end();
      return;
    }
    next();
  };
}

/**
 * The codec server's pieces: CORS and a body parser to mount at /codec before the API's own parser, and the
 * routes. Without a key there are no routes, and what is mounted answers anything under /codec with a 404
 * saying why.
 */
export function codecServer(config: Config): {
  routes: RouteSpec[];
  mount(app: Express): void;
} {
  const codec = payloadCodecFor(config);
  if (!codec) {
    return {
      routes: [],
      mount: (app) =>
        app.use('/codec', (_req, _res, next) =>
          next(
            new ApiError(
              404,
              'not_found',
              'payload encryption is off, so there is no codec endpoint: set KLEA_PAYLOAD_KEY (temporal.payload_key) ' +
                'on the API and every worker to turn it on'
            )
          )
        ),
    };
  }
  return {
    routes: codecRoutes(codec),
    mount: (app) => {
      app.use('/codec', uiCors(config.temporal.ui_url));
      app.use('/codec', express.json({ limit: CODEC_MAX_BODY_BYTES, strict: true }));
    },
  };
}
