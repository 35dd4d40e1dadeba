/** The thin CLI, driven at its prompt the way a person would, against the API on a real Temporal server. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { writeFileSync } from 'node:fs';
import { createApp } from '../../api/app';
import { ask } from '../../cli';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step } from '../support/task-driver';

describe('klea ask', () => {
  let fake: FakeModel;
  let env: TestEnv;
  const project = makeProject({ 'a.txt': 'alpha' });
  useFakeModelEnv({ name: 'cli', overrides: { project: { dir: project.dir } } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('prints the plan, takes a revision and an approval at the prompt, denies a path, and shows the answer', async () => {
    const server = http.createServer(createApp({ client: env.client, config: env.config, ssePollMs: 50 }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const secret = path.join(project.outside, 'secret.txt');
    writeFileSync(secret, 'secret');
    fake.on(
      'write_plan',
      { call: plan([step('s1', 'Delete a.txt')], { before_work: true }, 'Tidy up') },
      { call: plan([step('s1', 'Read the secret')], {}, 'Read the secret') }
    );
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: secret } }] });
    fake.on('compose_answer', { content: 'Access was denied, so nothing was read.' });

    const input = new PassThrough();
    let out = '';
    const output = new Writable({
      write(chunk, _enc, done) {
        out += chunk.toString();
        // Answer each prompt as it appears.
        if (/\[a\]pprove or \[r\]evise\? $/.test(out)) input.write(out.includes('review (revised)') ? 'a\n' : 'r\n');
        else if (/what should change\? $/.test(out)) input.write('Do not delete anything; read the secret instead.\n');
        else if (/or \[d\]eny\? $/.test(out)) input.write('d\n');
        done();
      },
    });
    try {
      const code = await ask({ prompt: 'Tidy up the project', api, readOnly: false }, { input, output });
      expect(code).toBe(0);
    } finally {
      server.closeAllConnections();
      server.close();
    }
    expect(out).toMatch(/plan: Tidy up\n {2}s1\. Step s1/);
    expect(out).toContain('review (before_work)');
    expect(out).toContain('review (revised)');
    expect(out).toContain(`workspace__read_file wants to read ${secret}`);
    expect(out).toContain('Access was denied, so nothing was read.');
    expect(out).toMatch(/\[Unverified: .*\]/);
    expect(out).toMatch(/task done\n$/);
    expect(fake.requestsFor('write_plan')[1].text).toContain('Do not delete anything');
  });

  it('lists changed files under their step and as a diffstat, and prints the diffs with --diff', async () => {
    const server = http.createServer(createApp({ client: env.client, config: env.config, ssePollMs: 50 }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    fake.on('write_plan', { call: plan([step('w', 'Write b.txt')], {}, 'Write') });
    fake.on('pick_tools', {
      calls: [{ name: 'workspace__write_file', args: { step_id: 'w', path: 'b.txt', content: 'one\ntwo\n' } }],
    });
    fake.on('compose_answer', { content: 'Written.' });
    let out = '';
    const output = new Writable({
      write(chunk, _enc, done) {
        out += chunk.toString();
        done();
      },
    });
    try {
      const code = await ask(
        { prompt: 'Write b.txt', api, readOnly: false, diff: true },
        { input: new PassThrough(), output }
      );
      expect(code).toBe(0);
    } finally {
      server.closeAllConnections();
      server.close();
    }
    expect(out).toContain(
      '    b.txt +2 -0\n      --- /dev/null\n      +++ b/b.txt\n      @@ -0,0 +1,2 @@\n      +one\n      +two\n'
    );
    expect(out).toContain(' b.txt | +2 -0\n 1 file changed, 2 insertions(+), 0 deletions(-)\ntask done');
  });
});
