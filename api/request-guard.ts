/**
 * Only requests meant for this API get in. A web page on another site cannot drive it from a browser: not through
 * a DNS name rebound to 127.0.0.1 (the `Host` is not one the API serves), not with a cross-site form or fetch (a
 * state-changing request's `Origin`, when the browser sends one, must be the API's own), and not with a "simple"
 * request that needs no preflight (every POST and PATCH must be `application/json`, which a form cannot send).
 * The page served by the API, `klea`, and curl send the API's own host and no foreign origin, so they are unaffected.
 */
import type { RequestHandler } from 'express';
import type { Config } from '../common/config';
import { ApiError } from './errors';
import { isLoopbackName } from './loopback';

const STATE_CHANGING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

/** `host[:port]` as a lower-case name and the whole header. */
function hostName(host: string): string {
  const h = host.toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.split(':')[0];
}

export function requestGuard(config: Pick<Config, 'api' | 'temporal'>): RequestHandler {
  const allowed = new Set(config.api.allowed_hosts.map((h) => h.toLowerCase()));
  const served = (host: string) => isLoopbackName(hostName(host)) || allowed.has(host) || allowed.has(hostName(host));
  // The Temporal UI asks the codec endpoints from its own origin.
  const uiOrigin = new URL(config.temporal.ui_url).origin;

  return (req, _res, next) => {
    const host = (req.headers.host ?? '').toLowerCase();
    if (!served(host)) {
      return next(
        new ApiError(
          403,
          'forbidden_host',
          `this API does not serve host "${host || '(none)'}": it answers loopback names, and the names listed in ` +
            'api.allowed_hosts (env KLEA_API_ALLOWED_HOSTS)'
        )
      );
    }
    if (!STATE_CHANGING.has(req.method)) return next();
    const origin = req.headers.origin;
    if (origin !== undefined) {
      let own = false;
      try {
        const o = new URL(origin);
        own = o.host.toLowerCase() === host || (req.path.startsWith('/codec/') && o.origin === uiOrigin);
      } catch {
        own = false;
      }
      if (!own)
        return next(
          new ApiError(
            403,
            'forbidden_origin',
            `requests from ${origin} are refused: only pages served by this API (${host}) may change anything`
          )
        );
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    // Security: a DELETE cannot come from a form and always needs a CORS preflight, so one without a body needs no type.
    const bodiless = req.headers['content-length'] === undefined || req.headers['content-length'] === '0';
    if (req.method === 'DELETE' && bodiless && !req.headers['transfer-encoding']) return next();
    if (type !== 'application/json')
      return next(
        new ApiError(
          415,
          'unsupported_media_type',
          `${req.method} ${req.path} takes a JSON body: send content-type: application/json` +
            (type ? ` (not ${type})` : '')
        )
      );
    next();
  };
}
