import request from 'supertest';
import { Client, Connection } from '@temporalio/client';
import { createApp } from '../../api/app';
import { resolveConfig } from '../../common/config-resolve';

describe('GET /openapi.json', () => {
  const client = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  const app = createApp({ client, config: resolveConfig({}, {}) });

  it('describes bodies, parameters, responses and errors from the zod schemas', async () => {
    const res = await request(app).get('/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toMatch(/^3\./);
    const create = doc.paths['/tasks'].post;
    expect(create.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['prompt'],
      additionalProperties: false,
      properties: { mode: { enum: ['general', 'scientific'] } },
    });
    expect(Object.keys(create.responses).sort()).toEqual([
      '201',
      '400',
      '401',
      '403',
      '404',
      '409',
      '413',
      '415',
      '503',
    ]);
    expect(create.responses['503']).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      headers: { 'Retry-After': { required: true, schema: { type: 'integer' } } },
    });
    expect(doc.paths['/tasks/{id}'].get.parameters).toEqual([
      expect.objectContaining({ name: 'id', in: 'path', required: true }),
    ]);
    expect(doc.paths['/tasks/{id}/events'].get.responses['200'].content).toHaveProperty('text/event-stream');
    expect(doc.paths['/healthz'].get.security).toEqual([]);
    expect(doc.paths['/tasks/{id}/review'].post.responses['409'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Error',
    });
    expect(doc.components.schemas.Error.required).toEqual(['error']);
  });

  it('describes the rewind routes: the body, the preview, the conflict and the expired checkpoints', async () => {
    const doc = (await request(app).get('/openapi.json')).body;
    const rewind = doc.paths['/tasks/{id}/rewind'];
    expect(rewind.post.requestBody.content['application/json'].schema).toMatchObject({
      required: ['toStep'],
      properties: { toStep: { type: 'string' }, rerun: { type: 'boolean' }, force: { type: 'boolean' } },
    });
    expect(Object.keys(rewind.post.responses)).toEqual(expect.arrayContaining(['200', '400', '404', '409', '410']));
    expect(rewind.post.responses['409'].description).toMatch(/conflicts/);
    expect(rewind.get.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'toStep', in: 'query', required: true })])
    );
  });
});
