import express from 'express';
import request from 'supertest';
import { isLoopbackName } from '../../api/loopback';
import { requestGuard } from '../../api/request-guard';

/** The names both the bind check and the `Host` check must take for loopback. */
const LOOPBACK_NAMES = [
  '127.0.0.1',
  '127.0.0.53',
  '127.255.255.254',
  '::1',
  '[::1]',
  'localhost',
  'LocalHost',
  '::ffff:127.0.0.1',
];
/** Names that only look like loopback: a DNS name can be rebound to anything. */
const NOT_LOOPBACK = ['127.example.com', 'localhost.example.com', '128.0.0.1', '::2', '::ffff:10.0.0.1', '0.0.0.0', ''];

/** `Host` header of a request to a name on the API's port (IPv6 addresses go in brackets). */
const hostHeader = (name: string) => `${name.includes(':') && !name.startsWith('[') ? `[${name}]` : name}:8080`;

function guardedApp() {
  const app = express();
  app.use(requestGuard({ api: { allowed_hosts: [] }, temporal: { ui_url: 'http://localhost:8233' } } as never));
  app.get('/ping', (_req, res) => res.json({ ok: true }));
  app.use(((err, _req, res, _next) =>
    res.status(err.status ?? 500).json({ code: err.code })) as express.ErrorRequestHandler);
  return app;
}

describe('loopback: one definition for binding without a token and for the Host names served', () => {
  it.each(LOOPBACK_NAMES)('%s is loopback: the API may bind it without a token', (name) => {
    expect(isLoopbackName(name)).toBe(true);
  });

  it.each(NOT_LOOPBACK)('"%s" is not loopback: binding it needs a token', (name) => {
    expect(isLoopbackName(name)).toBe(false);
  });

  it.each(LOOPBACK_NAMES)('a request whose Host is %s is served', async (name) => {
    const res = await request(guardedApp()).get('/ping').set('Host', hostHeader(name));

    expect(res.status).toBe(200);
  });

  it.each(NOT_LOOPBACK.filter(Boolean))('a request whose Host is "%s" is refused (DNS rebinding)', async (name) => {
    const res = await request(guardedApp()).get('/ping').set('Host', hostHeader(name));

    expect(res.status).toBe(403);
    expect(res.body.code).toBe('forbidden_host');
  });
});
