/**
 * The web page (web/), served by the API: `/` is index.html with the Temporal UI's address filled in, and the
 * page's ES modules and style sheet are static files beside it. None needs the token: they hold no data, and the
 * API calls the page makes carry it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import express, { type RequestHandler } from 'express';
import { REPO_ROOT } from '../runtime/temporal';
import { defineRoute, type RouteSpec } from './route';

const WEB_DIR = path.join(REPO_ROOT, 'web');
/** What of web/ the page loads: its modules and its style sheet (not sse.d.ts, nothing in a subfolder). */
const ASSET = /^\/[a-z0-9-]+\.(js|css)$/;
// Security: the browser takes each file for what its content type says and nothing else (a module must be
// JavaScript); no-cache, so a page never runs one version of a module beside another version of its imports.
const HEADERS = { 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' };

export function webPageRoute(opts: { uiUrl: string; namespace: string }): RouteSpec {
  return defineRoute({
    method: 'get',
    path: '/',
    operationId: 'web_index_html',
    summary: 'The web page: chat, plan, review, permissions, status and inspect panes (its modules load from /*.js)',
    tags: ['web'],
    auth: false,
    responses: { 200: { description: 'index.html', contentType: 'text/html; charset=utf-8' } },
    handler: ({ res }) => {
      const page = readFileSync(path.join(WEB_DIR, 'index.html'), 'utf8')
        .replace('__TEMPORAL_UI__', opts.uiUrl.replace(/\/$/, ''))
        .replace('__NAMESPACE__', opts.namespace);
      res
        .status(200)
        .set({ ...HEADERS, 'content-type': 'text/html; charset=utf-8' })
        .send(page);
    },
  });
}

/** The page's files from web/ as they are (`/app.js`, `/dom.js`, `/style.css`, ...); anything else goes on. */
export function webAssets(): RequestHandler {
  const serve = express.static(WEB_DIR, {
    index: false,
    redirect: false,
    dotfiles: 'ignore',
    cacheControl: false,
    setHeaders: (res) => res.set(HEADERS),
  });
  return (req, res, next) =>
    (req.method === 'GET' || req.method === 'HEAD') && ASSET.test(req.path) ? serve(req, res, next) : next();
}
