/**
 * End to end in headless Chromium: the API serving the page, a worker with the real workspace MCP server, the
 * real Temporal dev server and the scripted fake model. A person plans, revises, approves, denies a path,
 * reads the answer, switches to read-only, opens the / menu and runs /compact.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import type { FakeModel } from '../support/fake-model';
import { startPageStack, stopPageStack, type PageStack } from '../support/page-stack';
import { randomUUID } from 'node:crypto';
import { newSessionId } from '../../api/targets';
import { permissionSignal } from '../../workflows/task/messages';
import { SessionDriver } from '../support/session-driver';
import { type makeProject, plan, step, TaskDriver } from '../support/task-driver';
import { until } from '../support/until';

describe('the web page, end to end', () => {
  let fake: FakeModel;
  let base: string;
  let page: Page;
  let project: ReturnType<typeof makeProject>;

  let stack: PageStack;
  let shot: PageStack['shot'];

  beforeAll(async () => {
    stack = await startPageStack('e2e', { 'notes.md': '# Notes\nship it\n' });
    ({ fake, base, page, project, shot } = stack);
    writeFileSync(path.join(project.outside, 'secret.txt'), 'outside the project');
  });
  afterAll(() => stopPageStack(stack));

  it('plan → revise → approve → deny a path → answer; read-only; the / menu; /compact in the inspect pane', async () => {
    const secret = path.join(project.outside, 'secret.txt');
    fake.on('route_request', { call: { route: 'task', reply: null } });
    fake.on(
      'write_plan',
      { call: plan([step('s1', 'Delete the notes')], { before_work: true }, 'Clean up the notes') },
      {
        call: plan(
          [step('s1', 'Read the secret file'), step('s2', 'Summarise', { needs_tool: false, depends_on: ['s1'] })],
          {},
          'Summarise the secret file'
        ),
      }
    );
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: secret } }] });
    fake.on('do_step', { content: 'The file could not be read: access was denied.' });
    fake.on('compose_answer', { content: '## Result\n\nI could **not** read `secret.txt`: you denied access.' });

    await page.goto(base);
    await page.getByText('live', { exact: true }).waitFor();
    // The status pane says where commands run (the worker found bubblewrap working).
    await page.locator('#sandbox[data-state="on"]').waitFor();
    expect(await page.locator('#sandbox').textContent()).toBe('on (bubblewrap)');
    await page.getByLabel('Message (type / for commands)').fill('Summarise the secret file');
    await page.keyboard.press('Enter');

    // The plan, for review.
    await page.getByRole('form', { name: 'Review the plan' }).waitFor();
    await page.locator('.step', { hasText: 'Delete the notes' }).waitFor();
    await shot('1-plan-for-review');

    await page
      .getByLabel('What should change? (for Revise)')
      .fill('Do not delete anything. Read the secret file instead.');
    await page.getByRole('button', { name: 'Revise' }).click();
    await page.getByRole('form', { name: 'Review the revised plan' }).waitFor();
    await page.locator('.step', { hasText: 'Read the secret file' }).waitFor();
    expect(fake.requestsFor('write_plan')[1].text).toContain('Do not delete anything.');
    await shot('2-revised-plan');

    await page.getByRole('button', { name: 'Approve' }).click();
    const prompt = page.getByRole('group', { name: `Permission for ${secret}` });
    await prompt.waitFor();
    // The whole call is shown with the path, so the person deciding sees what would be done with it.
    expect(await prompt.locator('.permission-call').textContent()).toContain(
      `workspace__read_file {\n  "path": "${secret}"`
    );
    await shot('3-permission-prompt');
    await prompt.getByRole('button', { name: 'Deny' }).click();

    const answer = page.locator('.msg.task .answer');
    await answer.getByText('you denied access').waitFor();
    expect(await answer.locator('h4').textContent()).toBe('Result');
    expect(await answer.locator('.unverified').textContent()).toBe('Unverified');
    expect(await page.locator('.step[data-step="s1"]').getAttribute('data-status')).toBe('failed');
    expect(await page.locator('.step[data-step="s2"]').getAttribute('data-status')).toBe('done');
    expect(await page.locator('.msg.task').getAttribute('data-status')).toBe('done');
    expect(await page.locator('.temporal-link').getAttribute('href')).toMatch(/\/workflows\/task-/);
    await page.locator('#event-log li[data-type="answer"]').first().waitFor({ state: 'attached' });
    await shot('4-answer');

    // Tool access: switch to read-only and see it in the status pane.
    await page.getByLabel('Tool access').selectOption('read_only');
    await page
      .locator('#event-log li[data-type="context"] pre', { hasText: '"read_only"' })
      .first()
      .waitFor({ state: 'attached' });
    expect(await page.getByLabel('Tool access').inputValue()).toBe('read_only');

    // The / menu.
    const input = page.getByLabel('Message (type / for commands)');
    await input.fill('');
    await input.type('/');
    const menu = page.getByRole('listbox', { name: 'Commands' });
    await menu.waitFor();
    const options = await menu.getByRole('option').allTextContents();
    expect(options.map((o) => o.split(' ')[0])).toEqual(['/help', '/mode', '/compact', '/init']);
    await shot('5-command-menu');

    // /compact: the outcome is in the inspect pane, not the chat.
    const chatBefore = await page.locator('#messages > li').count();
    await input.fill('/compact');
    await page.keyboard.press('Enter');
    await page.locator('#memory-log li').first().waitFor();
    expect(await page.locator('#memory-log li').first().textContent()).toMatch(/nothing to summarise/);
    await page.waitForTimeout(300);
    const chatAfter = await page.locator('#messages > li').allTextContents();
    expect(chatAfter).toHaveLength(chatBefore + 1); // only the user's own "/compact" line
    expect(chatAfter.at(-1)).toBe('/compact');
    await shot('6-compact-in-inspect-pane');

    // A reload keeps the session: the conversation so far is shown again.
    await page.reload();
    await page.getByText('live', { exact: true }).waitFor();
    await page.locator('#messages li', { hasText: 'Summarise the secret file' }).first().waitFor();
    // The task shows as its card, as it did live: plan, steps and answer.
    await page.locator('.msg.task .answer', { hasText: 'you denied access' }).waitFor();
    expect(await page.locator('.msg.task .step[data-step="s1"]').getAttribute('data-status')).toBe('failed');
    await shot('7-after-reload');

    fake.assertDone();
  });

  it('model-chosen text with \\r, ESC sequences and bidi overrides is shown visibly in the plan, the permission and the answer', async () => {
    // Arrange: a plan and a command that hide what they do behind control and bidirectional characters.
    const secret = path.join(project.outside, 'secret.txt');
    const title = 'List the notes\r\x1b[2KDelete \u202Etxt.seton';
    const command = `cat ${secret}\r\x1b[2Kecho harmless \x1b]52;c;ZXZpbA==\x07`;
    fake.on('route_request', { call: { route: 'task', reply: null } });
    // s2 thinks without tools, so the task achieves something and its answer is composed.
    fake.on('write_plan', {
      call: plan(
        [step('s1', 'List the notes', { title }), step('s2', 'Say what ran', { needs_tool: false })],
        { before_work: true },
        'Tidy \u2066up\u2069'
      ),
    });
    fake.on('pick_tools', { calls: [{ name: 'workspace__run_command', args: { step_id: 's1', command } }] });
    fake.on('do_step', { content: 'Nothing ran.' });
    fake.on('compose_answer', { content: 'Done.\u202E regdab a si siht' });

    // Act: a new chat (the first test left its session read-only), then the request.
    await page.locator('#new-session').click();
    await page.getByText('live', { exact: true }).waitFor();
    await page.getByLabel('Message (type / for commands)').fill('Tidy up the notes');
    await page.keyboard.press('Enter');

    // Assert: each control is there to read, as a visible stand-in, and none is in the page's text as it is.
    await page.getByRole('form', { name: 'Review the plan' }).waitFor();
    const card = page.locator('.msg.task').last();
    expect(await card.locator('.step-title').first().textContent()).toBe(
      's1 · List the notes␍␛[2KDelete ⟦U+202E⟧txt.seton'
    );
    expect(await card.locator('.goal').textContent()).toBe('Goal: Tidy ⟦U+2066⟧up⟦U+2069⟧');
    await page.getByRole('button', { name: 'Approve' }).click();
    const prompt = card.getByRole('group', { name: `Permission for ${secret}` });
    await prompt.waitFor();
    expect(await prompt.locator('.permission-call').textContent()).toBe(
      `$ cat ${secret}␍␛[2Kecho harmless ␛]52;c;ZXZpbA==␇`
    );
    await shot('8-controls-shown');
    await prompt.getByRole('button', { name: 'Deny' }).click();
    await card.locator('.answer').getByText('regdab').waitFor();
    // The step that was denied is listed first, by Klea; then the model's answer, its controls made visible.
    expect(await card.locator('.answer .md p').first().textContent()).toMatch(/^Not achieved/);
    expect(await card.locator('.answer .md').textContent()).toContain('Done.⟦U+202E⟧ regdab a si siht');
    const text = await page.locator('body').innerText();
    // eslint-disable-next-line no-control-regex -- the assertion looks for control characters
    expect(text).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/);
    fake.assertDone();
  });

  it('a session that went to sleep reopens with its whole history: each task as its card; grants with Revoke', async () => {
    const outside = path.join(project.outside, 'secret.txt');
    const s = await SessionDriver.start(stack.env, project.dir, {
      sessionId: newSessionId(randomUUID()),
      idleCloseMs: 1500,
    });
    fake.on(
      'route_request',
      { call: { route: 'chat', reply: 'Hello there.' } },
      { call: { route: 'task', reply: null } }
    );
    fake.on('write_plan', { call: plan([step('s1', 'Read the secret file')], {}, 'Read the secret') });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: outside } }] });
    fake.on('compose_answer', { content: 'The secret file says: outside the project.' });
    await s.submit('hi');
    const r = await s.submit('Read the secret file');
    const t = await TaskDriver.attach(stack.env, r.taskId!);
    const ask = await t.waitFor('permission_requested');
    await t.handle.signal(permissionSignal, { requestId: ask.requestId, decision: 'allow_session' });
    await t.result();
    await until('the session sleeps', async () =>
      (await s.handle.describe()).status.name === 'COMPLETED' ? true : undefined
    );

    // The session the test before this one left open: awake, and last active before this one.
    const earlier = decodeURIComponent(new URL(page.url()).hash.slice(1));
    await page.goto(`${base}/#${s.sessionId}`);
    await page.reload();
    await page.getByText('live', { exact: true }).waitFor();

    const card = page.locator(`.msg.task[data-task="${r.taskId}"]`);
    await card.locator('.answer', { hasText: 'The secret file says' }).waitFor();
    expect(await card.locator('.task-prompt').textContent()).toBe('Read the secret file');
    expect(await card.locator('.step[data-step="s1"]').getAttribute('data-status')).toBe('done');
    expect(await card.locator('.goal').textContent()).toContain('Read the secret');
    const chat = await page.locator('#messages > li').allTextContents();
    expect(chat[0]).toBe('hi');
    expect(chat[1]).toContain('Hello there.');
    // Reading it woke nothing: the session still sleeps, and Recent sessions (most recently active first, asleep or
    // not) shows it in its place, marked asleep.
    expect((await s.handle.describe()).status.name).toBe('COMPLETED');
    await page.locator(`#session-list li[data-session="${s.sessionId}"] .badge.sleeping`).waitFor();
    const listed = await page
      .locator('#session-list li')
      .evaluateAll((items) => items.map((li) => li.getAttribute('data-session')));
    expect(earlier).toMatch(/^s-/);
    expect(listed.indexOf(s.sessionId)).toBeLessThan(listed.indexOf(earlier));
    expect(listed.indexOf(earlier)).toBeGreaterThan(-1);
    const grant = page.locator('#grant-list li[data-grant="g1"]');
    expect(await grant.locator('code').textContent()).toBe(`read ${outside}`);
    await shot('8-reopened-sleeping-session');

    // Revoking wakes it; the list follows the grants event.
    await grant.getByRole('button', { name: `Revoke read ${outside}` }).click();
    await page.locator('#grant-list li.note', { hasText: 'Nothing beyond the project.' }).waitFor();
    expect((await s.state()).grants).toEqual([]);
    fake.assertDone();
  });
  it('Undo from here lists the files and restores them; Redo from here shows a conflict, forces it and runs again', async () => {
    const notes = path.join(project.dir, 'notes.md');
    const todo = path.join(project.dir, 'todo.txt');
    const originalNotes = readFileSync(notes, 'utf8');
    const writeTodo = {
      name: 'workspace__write_file',
      args: { step_id: 's1', path: 'todo.txt', content: 'buy milk\n' },
    };
    const editNotes = {
      name: 'workspace__edit_file',
      args: { step_id: 's2', path: 'notes.md', old_string: 'ship it', new_string: 'shipped' },
    };
    fake.on('route_request', { call: { route: 'task', reply: null } });
    fake.on('write_plan', {
      call: plan([step('s1', 'Write todo.txt'), step('s2', 'Edit the notes', { depends_on: ['s1'] })], {}, 'Tidy'),
    });
    fake.on('pick_tools', { calls: [writeTodo] }, { calls: [editNotes] });
    fake.on('compose_answer', { content: 'Tidied.' });

    await page.goto(base);
    await page.getByText('live', { exact: true }).waitFor();
    await page.locator('#new-session').click();
    await page.getByText('live', { exact: true }).waitFor();
    await page.getByLabel('Message (type / for commands)').fill('Tidy the notes');
    await page.keyboard.press('Enter');
    const card = page.locator('.msg.task').last();
    await card.locator('.answer', { hasText: 'Tidied.' }).waitFor();
    expect(readFileSync(notes, 'utf8')).not.toBe(originalNotes);

    // Undo from s2: the files it will restore first; nothing happens until the person confirms.
    const s2 = card.locator('.step[data-step="s2"]');
    await s2.getByRole('button', { name: 'Undo from here' }).click();
    const undo = s2.getByRole('group', { name: 'Rewind to before s2' });
    await undo.locator('.rewind-files li[data-path="notes.md"]').waitFor();
    expect(await undo.locator('.rewind-files li').allTextContents()).toEqual(['notes.md · restore · s2']);
    expect(readFileSync(notes, 'utf8')).not.toBe(originalNotes);
    await shot('9-undo-preview');
    await undo.getByRole('button', { name: 'Confirm: undo from s2' }).click();
    await page.locator(`.msg.task[data-status="rewound"]`).last().waitFor();
    // The card follows the task again: the rewind's event arrives, and what the undone step changed is gone.
    await page.locator('#event-log li[data-type="rewound"]').first().waitFor({ state: 'attached' });
    await card.locator('.step[data-step="s2"] .changes').waitFor({ state: 'detached' });
    // The answer is gone with the undone step; the files still changed are the first step's.
    expect(await card.locator('.answer .md').count()).toBe(0);
    expect(await card.locator('.answer .changed-files li').allTextContents()).toEqual(['todo.txt +1 −0']);
    expect(readFileSync(notes, 'utf8')).toBe(originalNotes);
    expect(readFileSync(todo, 'utf8')).toBe('buy milk\n');
    expect(await card.locator('.step[data-step="s2"]').getAttribute('data-status')).toBe('pending');

    // Redo from s1 after the person changed todo.txt: the conflict is shown, and only a ticked box overwrites it.
    writeFileSync(todo, 'my own list\n');
    fake.on('pick_tools', { calls: [writeTodo] }, { calls: [editNotes] });
    fake.on('compose_answer', { content: 'Tidied again.' });
    const s1 = card.locator('.step[data-step="s1"]');
    await s1.getByRole('button', { name: 'Redo from here' }).click();
    const redo = s1.getByRole('group', { name: 'Rewind to before s1' });
    await redo.locator('.rewind-conflicts li[data-path="todo.txt"]').waitFor();
    await shot('10-redo-conflict');
    await redo.getByRole('button', { name: 'Confirm: redo from s1' }).click();
    await redo.locator('.rewind-status', { hasText: 'Tick the box' }).waitFor();
    expect(readFileSync(todo, 'utf8')).toBe('my own list\n');
    await redo.getByRole('checkbox').check();
    await redo.getByRole('button', { name: 'Confirm: redo from s1' }).click();
    await card.locator('.answer', { hasText: 'Tidied again.' }).waitFor();
    expect(readFileSync(todo, 'utf8')).toBe('buy milk\n');
    expect(readFileSync(notes, 'utf8')).not.toBe(originalNotes);
    expect(await card.getAttribute('data-status')).toBe('done');
    await shot('11-redone');
    fake.assertDone();
  });
});
