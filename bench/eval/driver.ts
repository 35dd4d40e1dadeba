/**
 * The eval's user, over Klea's REST API: submits a task, approves every plan, allows every path once, answers
 * every question with the task's answer, and cancels a task that runs over its time.
 */
import { setTimeout as sleep } from 'node:timers/promises';

type Json = Record<string, unknown>;

export interface DriveResult {
  taskId: string | null;
  status: string;
  error: string | null;
  answer: string | null;
  timedOut: boolean;
  seconds: number;
  usage: { inputTokens: number; outputTokens: number; modelCalls: number; toolCalls: number };
  questions: number;
  permissions: number;
  /** What the eval's user did that Klea refused (a 4xx/5xx answer to a decision). */
  refusedDecisions: string[];
  events: Json[];
  state: Json | null;
}

const FINAL = new Set(['done', 'failed', 'cancelled']);
const POLL_MS = 500;

export class KleaApi {
  constructor(readonly base: string) {}

  async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: Json }> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    let json: Json = {};
    try {
      json = text ? (JSON.parse(text) as Json) : {};
    } catch {
      json = { raw: text };
    }
    return { status: res.status, json };
  }
}

const errorText = (json: Json) => {
  const e = json.error as { code?: string; message?: string } | undefined;
  return e ? `${e.code}: ${e.message}` : JSON.stringify(json).slice(0, 300);
};

export async function driveTask(
  api: KleaApi,
  task: { prompt: string; projectDir: string; toolAccess: 'full' | 'read_only'; answer: string },
  timeoutMs: number
): Promise<DriveResult> {
  const started = Date.now();
  const result: DriveResult = {
    taskId: null,
    status: 'error',
    error: null,
    answer: null,
    timedOut: false,
    seconds: 0,
    usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, toolCalls: 0 },
    questions: 0,
    permissions: 0,
    refusedDecisions: [],
    events: [],
    state: null,
  };
  const finish = () => ({ ...result, seconds: (Date.now() - started) / 1000 });
  try {
    await drive(api, task, timeoutMs, result, started);
  } catch (err) {
    // The API went away (the stack died): the task is reported with what was seen, and the run goes on.
    result.error = `the eval lost the API: ${err instanceof Error ? err.message : String(err)}`;
  }
  return finish();
}

async function drive(
  api: KleaApi,
  task: { prompt: string; projectDir: string; toolAccess: 'full' | 'read_only'; answer: string },
  timeoutMs: number,
  result: DriveResult,
  started: number
): Promise<void> {
  // A worker that has just started may not poll yet: the API says no_worker (503) for a while.
  let created: { status: number; json: Json } | undefined;
  for (;;) {
    created = await api.call('POST', '/tasks', {
      prompt: task.prompt,
      projectDir: task.projectDir,
      toolAccess: task.toolAccess,
    });
    if (created.status !== 503 || Date.now() - started > 60_000) break;
    await sleep(1000);
  }
  if (created.status !== 201 && created.status !== 200) {
    result.error = `POST /tasks answered ${created.status}: ${errorText(created.json)}`;
    return;
  }
  const taskId = String(created.json.taskId);
  result.taskId = taskId;
  const path = `/tasks/${encodeURIComponent(taskId)}`;

  const decide = async (route: string, body: Json, what: string) => {
    const res = await api.call('POST', `${path}/${route}`, body).catch((err: Error) => err);
    if (res instanceof Error) result.refusedDecisions.push(`${what}: ${res.message}`);
    else if (res.status >= 400) result.refusedDecisions.push(`${what}: ${res.status} ${errorText(res.json)}`);
  };
  const handle = async (e: Json) => {
    if (e.type === 'review_requested') await decide('review', { decision: 'approve', planHash: e.planHash }, 'approve');
    if (e.type === 'questions') {
      const questions = (e.questions as string[]) ?? [];
      result.questions += questions.length;
      await decide('clarify', { answers: Object.fromEntries(questions.map((q) => [q, task.answer])) }, 'clarify');
    }
    if (e.type === 'permission_requested') {
      result.permissions += 1;
      await decide('permissions', { requestId: e.requestId, decision: 'allow_once' }, 'allow_once');
    }
  };

  let lastSeq = 0;
  let cancelledAt: number | null = null;
  for (;;) {
    const events = await api.call('GET', `${path}/events?after=${lastSeq}`).catch(() => undefined);
    for (const e of (events?.status === 200 ? (events.json.events as Json[]) : []) ?? []) {
      result.events.push(e);
      lastSeq = Math.max(lastSeq, Number(e.seq));
      if (cancelledAt === null) await handle(e);
    }
    const state = await api.call('GET', path).catch(() => undefined);
    if (state?.status === 200) {
      result.state = state.json;
      const status = String(state.json.status);
      if (FINAL.has(status)) {
        // The events up to the end, then the state as the task left it.
        const rest = await api.call('GET', `${path}/events?after=${lastSeq}`).catch(() => undefined);
        if (rest?.status === 200) result.events.push(...(rest.json.events as Json[]));
        result.status = result.timedOut ? 'timeout' : status;
        result.answer = (state.json.answer as string | null) ?? null;
        result.error = (state.json.error as string | null) ?? null;
        const usage = state.json.usage as Partial<DriveResult['usage']> | undefined;
        result.usage = {
          inputTokens: usage?.inputTokens ?? 0,
          outputTokens: usage?.outputTokens ?? 0,
          modelCalls: usage?.modelCalls ?? 0,
          toolCalls: usage?.toolCalls ?? 0,
        };
        return;
      }
    }
    const now = Date.now();
    if (cancelledAt === null && now - started > timeoutMs) {
      result.timedOut = true;
      cancelledAt = now;
      await decide('cancel', { reason: `make eval: over ${Math.round(timeoutMs / 1000)} s` }, 'cancel');
    }
    if (cancelledAt !== null && now - cancelledAt > 120_000) {
      result.status = 'timeout';
      result.error = 'the task did not end within 2 minutes of its cancellation';
      return;
    }
    await sleep(POLL_MS);
  }
}
