/**
 * The task's message handlers (workflow code): the `state` and `events` queries, the decision signals and their
 * same-named updates (`review`, `clarify`, `permission`), the `cancel` signal, and the session's `grantRevoked`.
 * Each one reads or changes the `TaskRun`; a cancel also cancels the scope the task's work runs in. `rewound` comes
 * from a rewind, and `klea:reset` from the run's own reset (shared/reset-notice.ts).
 */
import { type CancellationScope, defineSignal, setHandler } from '@temporalio/workflow';
import { RESET_NOTICE_SIGNAL } from '../shared/reset-notice';
import { RewoundSignalSchema } from '../../common/rewind';
import {
  CancelSchema,
  ClarifySchema,
  GrantRevokedSchema,
  PermissionDecisionSchema,
  ReviewDecisionSchema,
} from '../../common/task';
import { parseOrThrow, parseSignal } from '../shared/payloads';
import {
  cancelSignal,
  clarifySignal,
  clarifyUpdate,
  eventsQuery,
  grantRevokedSignal,
  permissionSignal,
  permissionUpdate,
  reviewSignal,
  reviewUpdate,
  rewoundSignal,
  setDecisionHandlers,
  stateQuery,
} from './messages';
import type { TaskRun } from './task-run';

export function setTaskHandlers(task: TaskRun, work: CancellationScope): void {
  const { reviews, questions, permissions, log } = task;
  setHandler(stateQuery, () => task.snapshot());
  setHandler(eventsQuery, (args) => log.after(args?.after ?? 0, args?.before));
  setDecisionHandlers(reviewSignal, reviewUpdate, {
    accept: (raw) => reviews.accept(raw),
    refusal: (raw) => reviews.refusal(parseOrThrow(ReviewDecisionSchema, 'invalid review decision', raw, 'decision')),
  });
  setDecisionHandlers(clarifySignal, clarifyUpdate, {
    accept: (raw) => {
      const problem = questions.accept(raw);
      if (problem) task.ignoredSignal('clarify', problem);
    },
    refusal: (raw) => questions.problem(parseOrThrow(ClarifySchema, 'invalid answers', raw, 'answers')),
  });
  setDecisionHandlers(permissionSignal, permissionUpdate, {
    accept: (raw) => permissions.accept(raw),
    refusal: (raw) =>
      permissions.problem(parseOrThrow(PermissionDecisionSchema, 'invalid permission decision', raw, 'decision')),
  });
  setHandler(rewoundSignal, (raw: unknown) => {
    const p = parseSignal(RewoundSignalSchema, raw, 'rewound');
    if (!p.ok) return task.ignoredSignal('rewound', p.problem);
    // Sent by hand it can do no more than the `cancel` signal could: end the task, or let it go on.
    if (task.rewinds.rewound(p.value)) work.cancel();
  });
  setHandler(defineSignal(RESET_NOTICE_SIGNAL), () => task.rewinds.noticeReset());
  setHandler(grantRevokedSignal, (raw: unknown) => {
    // Security: from the next permission check on, the revoked grant covers nothing (a call already running keeps
    // what it was started with).
    const p = parseSignal(GrantRevokedSchema, raw, 'grantRevoked');
    if (p.ok) permissions.revoke(p.value);
    else task.ignoredSignal('grantRevoked', p.problem);
  });
  setHandler(cancelSignal, (raw: unknown) => {
    // From the Temporal CLI a bare string is a natural way to give the reason; anything else malformed still
    // cancels (that is what the sender asked for) and says the reason was not used.
    const p = parseSignal(CancelSchema, typeof raw === 'string' ? { reason: raw } : (raw ?? {}), 'cancel');
    const reason = (p.ok && p.value.reason?.trim()) || 'cancelled by the user';
    if (!task.cancel(reason)) return;
    if (!p.ok) task.ignoredSignal('cancel', `the reason was not used (${p.problem}); cancelling anyway`);
    work.cancel();
  });
}
