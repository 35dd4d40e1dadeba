/**
 * End to end in headless Chromium: what a revision changed in the plan, a step's edit as a diff under it, and the
 * inbox, where a task parked in another session waits and opens that session at its decision.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { FakeModel } from '../support/fake-model';
import { startPageStack, stopPageStack, type PageStack } from '../support/page-stack';
import { type makeProject, plan, step } from '../support/task-driver';

describe('diffs and the inbox on the web page, end to end', () => {
  let fake: FakeModel;
  let base: string;
  let browser: Browser;
  let page: Page;
  let project: ReturnType<typeof makeProject>;

  let stack: PageStack;
  let shot: PageStack['shot'];

  beforeAll(async () => {
    stack = await startPageStack('e2e-inbox', { 'notes.md': '# Notes\nship it\n' });
    ({ fake, base, browser, page, project, shot } = stack);
  });
  afterAll(() => stopPageStack(stack));

  it("a revision's differences are marked in the review form; an edit's diff shows under its step", async () => {
    fake.on('route_request', { call: { route: 'task', reply: null } });
    fake.on(
      'write_plan',
      {
        call: plan(
          [step('s1', 'Read the notes', { needs_tool: false }), step('s2', 'Count the lines')],
          { before_work: true },
          'Look at the notes'
        ),
      },
      {
        call: plan(
          [step('s1', 'Read the notes', { needs_tool: false }), step('s3', 'Say when to ship in notes.md')],
          {},
          'Update the notes'
        ),
      }
    );
    fake.on('do_step', { content: 'The notes say: ship it.' });
    fake.on('pick_tools', {
      calls: [
        {
          name: 'workspace__edit_file',
          args: { step_id: 's3', path: 'notes.md', old_string: 'ship it\n', new_string: 'ship it today\n' },
        },
      ],
    });
    fake.on('compose_answer', { content: 'The notes now say to ship today.' });

    await page.goto(base);
    await page.getByText('live', { exact: true }).waitFor();
    await page.getByLabel('Message (type / for commands)').fill('Update the notes');
    await page.keyboard.press('Enter');

    await page.getByRole('form', { name: 'Review the plan' }).waitFor();
    await page.getByLabel('What should change? (for Revise)').fill('Do not count; write when to ship.');
    await page.getByRole('button', { name: 'Revise' }).click();

    // The revised plan: what changed is marked, with the feedback that led to it.
    const form = page.getByRole('form', { name: 'Review the revised plan' });
    await form.waitFor();
    const changes = form.locator('.plan-diff');
    expect(await changes.locator('.plan-feedback').textContent()).toContain('Do not count; write when to ship.');
    expect(await changes.locator('li.plan-diff-added').textContent()).toContain('s3 · Step s3');
    expect(await changes.locator('li.plan-diff-removed').textContent()).toContain('removed');
    expect(await changes.locator('li.plan-diff-removed').textContent()).toContain('s2');
    expect(await page.locator('.step[data-step="s3"]').getAttribute('data-diff')).toBe('added');
    expect(await page.locator('.step[data-step="s1"]').getAttribute('data-diff')).toBeNull();
    await shot('inbox-1-revised-plan-marked');

    await page.getByRole('button', { name: 'Approve' }).click();
    const answer = page.locator('.msg.task .answer');
    await answer.getByText('ship today').waitFor();
    expect(readFileSync(path.join(project.dir, 'notes.md'), 'utf8')).toBe('# Notes\nship it today\n');

    // The edit's diff under its step, collapsed until opened; the answer lists the changed file.
    const change = page.locator('.step[data-step="s3"] details.change[data-path="notes.md"]');
    await change.waitFor();
    expect(await change.locator('summary').textContent()).toBe('notes.md +1 −1');
    await change.locator('summary').click();
    expect(await change.locator('.diff-del').textContent()).toBe('-ship it\n');
    expect(await change.locator('.diff-add').textContent()).toBe('+ship it today\n');
    expect(await answer.locator('.changed-files li[data-path="notes.md"]').textContent()).toBe('notes.md +1 −1');
    await shot('inbox-2-edit-diff');
    fake.assertDone();
  });

  it('a task parked in another session waits in the inbox; clicking it opens that session at the decision', async () => {
    fake.on('write_plan', { call: plan([step('p1', 'Look around')], { before_work: true }, 'Look') });
    const res = await fetch(`${base}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Parked in another session\nsecond line' }),
    });
    expect(res.status).toBe(201);
    const { taskId, sessionId } = (await res.json()) as { taskId: string; sessionId: string };
    const openSession = await page.locator('#session-link').textContent();
    expect(openSession).not.toBe(sessionId);

    const item = page.locator(`#waiting-list li[data-task="${taskId}"]`);
    await item.waitFor({ timeout: 20_000 });
    expect(await item.locator('a').textContent()).toBe('Review Parked in another session');
    expect(await item.locator('.waited').textContent()).toMatch(/waiting \d+ (s|min)/);
    await page.locator(`#session-list li[data-session="${sessionId}"]`).waitFor({ timeout: 20_000 });
    await shot('inbox-3-waiting-for-you');

    await item.locator('a').click();
    await page.waitForURL(`**/#${sessionId}`);
    expect(await page.locator('#session-link').textContent()).toBe(sessionId);
    const card = page.locator(`.msg.task[data-task="${taskId}"]`);
    const review = card.getByRole('form', { name: 'Review the plan' });
    await review.waitFor();
    // The decision is brought into view and focused.
    await page.waitForFunction('document.activeElement && document.activeElement.closest("form.review") !== null');
    await shot('inbox-4-opened-at-decision');

    await fetch(`${base}/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    fake.assertDone();
  });

  /**
   * Sends a task from a hidden page and expects it counted in the title and notified when it waits for a review.
   * `holdReply`: the page learns of the task from the session's event stream, and sees it already waiting, before
   * the request that sent it returns (the order a fast task and a slow network give).
   */
  async function hiddenPageSeesTheWait(opts: { holdReply: boolean }) {
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    await context.grantPermissions(['notifications'], { origin: base });
    const hidden = await context.newPage();
    // Hidden, with notifications recorded instead of shown.
    await hidden.addInitScript(`
      let isHidden = false;
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => isHidden });
      const shown = [];
      function Recorded(title, opts) { shown.push({ title: title, body: opts.body }); }
      Recorded.permission = 'granted';
      Recorded.requestPermission = () => Promise.resolve('granted');
      window.Notification = Recorded;
      window.shownNotifications = shown;
      window.setHidden = (h) => { isHidden = h; };
    `);
    // Resolved once the held reply has reached the page (at once when nothing is held).
    let released: Promise<void> = Promise.resolve();
    if (opts.holdReply) {
      let release!: () => void;
      released = new Promise((r) => (release = r));
      await hidden.route('**/sessions/*/messages', async (route) => {
        const reply = await route.fetch();
        await hidden.locator('.msg.task .task-status', { hasText: 'awaiting review' }).waitFor();
        await route.fulfill({ response: reply });
        release();
      });
    }
    fake.on('route_request', { call: { route: 'task', reply: null } });
    fake.on('write_plan', { call: plan([step('h1', 'Look')], { before_work: true }, 'Look') });
    await hidden.goto(base);
    await hidden.getByText('live', { exact: true }).waitFor();
    await hidden.getByLabel('Message (type / for commands)').fill('Look at the notes while I am away');
    // The tab is hidden from the moment the request is sent.
    await hidden.evaluate('window.setHidden(true)');
    await hidden.keyboard.press('Enter');
    await hidden.locator('.msg.task').waitFor();

    await hidden.waitForFunction('document.title === "(1) Klea"');
    expect(await hidden.evaluate('window.shownNotifications')).toEqual([
      { title: 'Klea waits for a review', body: 'Look at the notes while I am away' },
    ]);
    await hidden.evaluate('window.setHidden(false); document.dispatchEvent(new Event("visibilitychange"))');
    await hidden.waitForFunction('document.title === "Klea"');

    // The held reply is let through before the task is cancelled: a route still waiting when it is removed lets
    // the page's own request go out, and the message would be sent a second time.
    await released;
    const taskId = await hidden.locator('.msg.task').getAttribute('data-task');
    await fetch(`${base}/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    await hidden.unrouteAll({ behavior: 'ignoreErrors' });
    await context.close();
    fake.assertDone();
  }

  it('a decision that starts while the page is hidden counts in the tab title and is notified', async () => {
    await hiddenPageSeesTheWait({ holdReply: false });
  });

  it('a task the page hears of from the session before its own request returns is still news when it waits', async () => {
    await hiddenPageSeesTheWait({ holdReply: true });
  });
});
