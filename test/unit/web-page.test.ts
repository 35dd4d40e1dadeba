import request from 'supertest';
import { Client, Connection } from '@temporalio/client';
import { createApp } from '../../api/app';
import { resolveConfig } from '../../common/config-resolve';

describe('the web page and its ES modules, served as files', () => {
  const client = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  const app = createApp({ client, config: resolveConfig({ api: { token: 'a-token-of-sixteen-chars' } }, {}) });

  it('the page loads its script as an ES module, with the Temporal UI filled in and no token needed', async () => {
    const res = await request(app).get('/');

    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.text).toContain('<script type="module" src="/app.js"></script>');
    expect(res.text).not.toContain('__TEMPORAL_UI__');
  });

  it.each([
    '/app.js',
    '/chat.js',
    '/composer.js',
    '/notifications.js',
    '/status-pane.js',
    '/dom.js',
    '/sse.js',
    '/diffs.js',
    '/markdown.js',
    '/visible.js',
  ])('%s is the file as it is, as JavaScript a browser runs as a module', async (file) => {
    const res = await request(app).get(file);

    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.text).toMatch(/^(import|export) /m);
  });

  it('the style sheet is CSS', async () => {
    const res = await request(app).get('/style.css');

    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/css; charset=utf-8');
  });

  it.each(['/sse.d.ts', '/index.html', '/nothing.js', '/%2e%2e/package.json', '/vendor/x.js'])(
    'what is not one of the page files is a 404 JSON error: %s',
    async (file) => {
      const res = await request(app).get(file);

      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  );
});
