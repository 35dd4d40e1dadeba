/** The web page (web/), served by the API at `/`. Static files; the page talks to the same API. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../runtime/temporal';
import { defineRoute, type RouteSpec } from './route';

const WEB_DIR = path.join(REPO_ROOT, 'web');

const FILES: Array<{ route: string; file: string; type: string; summary: string; precededBy?: string[] }> = [
  {
    route: '/',
    file: 'index.html',
    type: 'text/html; charset=utf-8',
    summary: 'The web page: chat, plan, review, permissions, status and inspect panes',
  },
  {
    route: '/app.js',
    file: 'app.js',
    // The page's parts come first, in the same response (the event-stream parser it shares with the CLI, its DOM
    // helpers, API client, change views, decision forms, inbox and task cards): the page gets them without routes
    // of their own, so the routes (and the OpenAPI document) stay as they are.
    precededBy: ['sse.js', 'dom.js', 'client.js', 'changes.js', 'decisions.js', 'inbox.js', 'task-cards.js'],
    type: 'text/javascript; charset=utf-8',
    summary: "The web page's script",
  },
  {
    route: '/markdown.js',
    file: 'markdown.js',
    type: 'text/javascript; charset=utf-8',
    summary: "The web page's markdown renderer",
  },
  { route: '/style.css', file: 'style.css', type: 'text/css; charset=utf-8', summary: "The web page's style sheet" },
];

export function webRoutes(opts: { uiUrl: string; namespace: string }): RouteSpec[] {
  return FILES.map(({ route, file, type, summary, precededBy = [] }) =>
    defineRoute({
      method: 'get',
      path: route,
      operationId: `web_${file.replace(/\W/g, '_')}`,
      summary,
      tags: ['web'],
      // The page and its assets hold no data; the API calls the page makes carry the token.
      auth: false,
      responses: { 200: { description: file, contentType: type } },
      handler: ({ res }) => {
        let body = [...precededBy, file].map((f) => readFileSync(path.join(WEB_DIR, f), 'utf8')).join('\n');
        if (file === 'index.html')
          body = body
            .replace('__TEMPORAL_UI__', opts.uiUrl.replace(/\/$/, ''))
            .replace('__NAMESPACE__', opts.namespace);
        res
          .status(200)
          .set({ 'content-type': type, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' })
          .send(body);
      },
    })
  );
}
