/**
 * Request and response schemas of the REST API (docs/architecture.md §8). The API validates with these and the OpenAPI
 * document is generated from them. Bodies that carry a workflow message are the message's own schema (common/task.ts,
 * common/session.ts), so the API and the workflow's validators accept exactly the same payloads.
 */
import { z } from 'zod';
import { ModeSchema, NetworkSchema, ReviewPolicySchema, ToolAccessSchema } from './config';
import { GroupIdSchema, HostIdSchema } from './home';
import { EventTypeSchema, TASK_STATUSES, TaskStatusSchema } from './events';
import { StepIdSchema } from './plan';
import { RewindOutlineSchema, RewindRequestSchema } from './rewind';
import { CallUsageSchema } from './model-protocol';
import { SettingsSchema, SubmitRequestSchema, SubmitResultSchema } from './session';
import {
  CancelSchema,
  ClarifySchema,
  HeldGrantSchema,
  PermissionDecisionSchema,
  ReviewDecisionSchema,
  TaskStateSchema,
} from './task';

export const ErrorResponseSchema = z.object({
  error: z.object({
    code: z
      .string()
      .describe(
        'machine-readable error code, e.g. invalid_request, unauthorized, not_found, conflict, ' +
          'temporal_unavailable, no_worker, not_applied'
      ),
    message: z.string().describe('what went wrong, for people'),
    details: z
      .unknown()
      .optional()
      .describe('for validation errors: [{path, message}]; for a task or session that has ended: {status}'),
  }),
});

export const HealthResponseSchema = z.object({
  status: z.enum(['ok', 'degraded']),
  temporal: z.object({
    status: z.enum(['ok', 'unreachable']),
    address: z.string(),
    namespace: z.string(),
    error: z.string().optional(),
  }),
  worker: z.object({
    status: z.enum(['ok', 'none', 'unknown']),
    taskQueue: z.string(),
    pollers: z.number().int().describe('workers seen polling the task queue recently'),
  }),
  model: z.object({ status: z.enum(['configured', 'not_configured']), name: z.string(), hint: z.string().optional() }),
  sandbox: z
    .object({ status: z.enum(['on', 'off', 'unavailable', 'unknown']), detail: z.string() })
    .describe(
      "the polling workers' command sandbox: on, off (tools.sandbox.mode: none), unavailable (commands refused)"
    ),
  temporalUi: z.string(),
  hosts: z
    .array(
      z.object({
        hostId: z.string(),
        taskQueue: z.string(),
        status: z.enum(['ok', 'gone']),
        pollers: z.number().int().describe("workers seen polling the host's task queue recently"),
        roots: z
          .array(z.string())
          .optional()
          .describe('the project roots the host says it holds (absent: it does not say, and may hold any)'),
        group: z
          .string()
          .optional()
          .describe('the group of hosts it shares its projects with (task queue klea-group-<group>), if any'),
      })
    )
    .optional()
    .describe('on a cluster: the worker hosts that hold projects, and whether each polls its task queue now'),
});

/** What /healthz answers: everything with the token (or when none is set), else only whether it is up. */
export const HealthAnswerSchema = z.union([HealthResponseSchema, z.object({ status: z.enum(['ok', 'degraded']) })]);

export const IdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._-]+$/, 'may contain only letters, digits, ".", "_" and "-"');

export const CreateTaskRequestSchema = z.strictObject({
  prompt: z.string().trim().min(1, 'must not be empty').max(100_000),
  projectDir: z.string().min(1).optional(),
  mode: ModeSchema.optional(),
  toolAccess: ToolAccessSchema.optional(),
  network: NetworkSchema.optional(),
  review: ReviewPolicySchema.optional(),
  sessionId: IdSchema.optional(),
  host: HostIdSchema.optional().describe(
    'on a cluster: the worker host that holds the project (its activities run on task queue klea-host-<host>), ' +
      'taken when the request starts a session (a session keeps its home); absent: the API chooses among the ' +
      'hosts that poll, the same one for the same project while they poll'
  ),
  group: GroupIdSchema.optional().describe(
    'on a cluster: the group of worker hosts that share the project on a volume they all reach (its activities run ' +
      'on task queue klea-group-<group>, and those that change it on the host that holds its lease); absent: the ' +
      'API takes the group when only hosts of one group hold the project'
  ),
});

export const CreateTaskResponseSchema = z.object({
  taskId: z.string(),
  sessionId: z.string(),
  temporalUiUrl: z.string(),
  queued: z.boolean().describe("true when the session's current task runs first; the task starts after it"),
});

export const TaskParamsSchema = z.strictObject({ id: IdSchema });
export const EventsQuerySchema = z.strictObject({ after: z.coerce.number().int().min(0).optional() });

export const EventSchema = z
  .looseObject({ seq: z.number().int(), at: z.string(), type: EventTypeSchema })
  .describe('an event of the log; further fields depend on type');
export const EventListSchema = z.object({ events: z.array(EventSchema) });

export const TaskStateResponseSchema = TaskStateSchema.extend({ temporalUiUrl: z.string() });

export const RewindRequestBodySchema = RewindRequestSchema;
export const RewindPreviewQuerySchema = z.strictObject({ toStep: StepIdSchema });
export const RewindResponseSchema = RewindOutlineSchema.extend({
  status: z.enum(['rewound', 'preview']),
  rerun: z.boolean().optional(),
  runId: z.string().optional().describe('the run that goes on from the step, or ends `rewound`'),
  previousRunId: z.string().optional().describe('the run that was reset (kept; linked in the Temporal UI)'),
  lastSeq: z
    .number()
    .int()
    .optional()
    .describe("the task's events from here on follow the rewind (the first is `rewound`)"),
  temporalUiUrl: z.string(),
});

export const CreateSessionRequestSchema = z.strictObject({
  projectDir: z.string().min(1).optional(),
  mode: ModeSchema.optional(),
  toolAccess: ToolAccessSchema.optional(),
  network: NetworkSchema.optional(),
  review: ReviewPolicySchema.optional(),
  host: HostIdSchema.optional().describe(
    'on a cluster: the worker host that holds the project (its activities run on task queue klea-host-<host>), ' +
      'taken when the request starts a session (a session keeps its home); absent: the API chooses among the ' +
      'hosts that poll, the same one for the same project while they poll'
  ),
  group: GroupIdSchema.optional().describe(
    'on a cluster: the group of worker hosts that share the project on a volume they all reach (its activities run ' +
      'on task queue klea-group-<group>, and those that change it on the host that holds its lease); absent: the ' +
      'API takes the group when only hosts of one group hold the project'
  ),
});
export const CreateSessionResponseSchema = z.object({ sessionId: z.string(), temporalUiUrl: z.string() });

export const SessionParamsSchema = z.strictObject({ id: IdSchema });

export const MessageRequestSchema = SubmitRequestSchema;
export const MessageResponseSchema = SubmitResultSchema;

export const PatchSessionRequestSchema = SettingsSchema.refine(
  (v) => v.mode !== undefined || v.toolAccess !== undefined || v.network !== undefined,
  { message: 'give mode, toolAccess or network' }
);

export const SessionStateResponseSchema = z
  .looseObject({
    sessionId: z.string(),
    projectDir: z.string(),
    mode: ModeSchema,
    toolAccess: ToolAccessSchema,
    network: NetworkSchema,
    status: z
      .enum(['running', 'sleeping'])
      .describe(
        'sleeping: idle for session.idle_close_ms, its run completed; the next message, setting or command wakes it'
      ),
    grants: z
      .array(HeldGrantSchema)
      .describe('paths allowed for the session: each with its id (to revoke it) and when it lapses (expiresAt)'),
    currentTaskId: z.string().nullable(),
    tasks: z.array(z.string()),
    usage: CallUsageSchema.describe(
      'model tokens and calls of the whole session: routing, summaries, /init and every task'
    ),
    commands: z.array(
      z.object({ name: z.string(), usage: z.string(), description: z.string(), runs: z.enum(['client', 'graph']) })
    ),
    temporalUiUrl: z.string(),
  })
  .describe('session state: settings, memory, queue, tasks and the commands (client or graph)');

export const GrantParamsSchema = z.strictObject({
  id: IdSchema,
  grantId: z.string().regex(/^g[1-9][0-9]*$/, 'grant ids look like g1 (see grants in GET /sessions/:id)'),
});
export const RevokeGrantResponseSchema = z.object({ revoked: HeldGrantSchema });

export const ReviewRequestSchema = ReviewDecisionSchema;
export const ClarifyRequestSchema = ClarifySchema;
export const PermissionRequestBodySchema = PermissionDecisionSchema;
export const CancelRequestBodySchema = CancelSchema;
export const AcceptedResponseSchema = z.object({ accepted: z.literal(true) });

/**
 * Temporal's codec-server protocol (`POST /codec/encode`, `/codec/decode`): payloads in Temporal's JSON form,
 * bytes as base64. Fields Temporal may add to a payload are accepted and left out of the answer.
 */
const Base64Schema = z
  .string()
  .regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'expected base64')
  .refine((s) => s.replace(/=+$/, '').length % 4 !== 1, 'expected base64 (its length is not that of any bytes)');
export const CodecPayloadsSchema = z.object({
  payloads: z.array(
    z.object({
      metadata: z
        .record(z.string(), Base64Schema)
        .optional()
        .describe('metadata values, each base64 (e.g. encoding: "anNvbi9wbGFpbg==", json/plain)'),
      data: Base64Schema.optional().describe('the payload bytes, base64'),
    })
  ),
});
export type CodecPayloads = z.infer<typeof CodecPayloadsSchema>;

/**
 * The inbox (`GET /tasks`, `GET /sessions`): runs listed from Temporal's visibility, newest first, a page at a time.
 * The cursor is opaque (Temporal's next-page token, base64url); pass back the one a page returned.
 */
const STATUS_LIST = new RegExp(`^(${TASK_STATUSES.join('|')})(,(${TASK_STATUSES.join('|')}))*$`);
const CursorSchema = z
  .string()
  .min(1)
  .max(4000)
  .regex(/^[A-Za-z0-9_-]+$/, 'expected the cursor a previous page returned')
  .describe('the nextCursor of the previous page');
const LimitSchema = z.coerce.number().int().min(1).max(100).default(20).describe('items per page (1–100)');

export const ListTasksQuerySchema = z.strictObject({
  status: z
    .string()
    .max(400)
    .regex(STATUS_LIST, `expected a task status, or several separated by commas: ${TASK_STATUSES.join(', ')}`)
    .optional()
    .describe('only tasks in this status (or any of these comma-separated statuses)'),
  sessionId: IdSchema.optional().describe("only this session's tasks"),
  limit: LimitSchema,
  cursor: CursorSchema.optional(),
});
export const ListSessionsQuerySchema = z
  .strictObject({
    host: HostIdSchema.optional().describe('on a cluster: only the sessions whose project this worker host holds'),
    group: GroupIdSchema.optional().describe(
      'on a cluster: only the sessions whose project this group of hosts shares'
    ),
    limit: LimitSchema,
    cursor: CursorSchema.optional(),
  })
  .refine((q) => q.host === undefined || q.group === undefined, {
    path: ['group'],
    message: 'name a host or a group, not both',
  });

export const TaskListItemSchema = z.object({
  id: z.string().describe('the task id'),
  sessionId: z.string().nullable(),
  status: TaskStatusSchema,
  request: z.string().nullable().describe("the request's first line (the run's summary)"),
  startedAt: z.string(),
  closedAt: z.string().nullable(),
  waitingSince: z.string().nullable().describe('for a task waiting for the user (awaiting_*): when it started waiting'),
  tokens: z.number().int().nullable().describe('model tokens used so far, when known'),
  temporalUiUrl: z.string(),
});
export const TaskListSchema = z.object({
  tasks: z.array(TaskListItemSchema),
  nextCursor: z.string().nullable().describe('pass as cursor for the next page; null on the last page'),
});

export const SessionListItemSchema = z.object({
  id: z.string().describe('the session id'),
  status: z
    .enum(['running', 'sleeping', 'closed'])
    .describe('sleeping: idle, its run completed (a message wakes it); closed: failed or terminated'),
  summary: z.string().nullable().describe("the session run's summary"),
  startedAt: z.string(),
  closedAt: z.string().nullable(),
  temporalUiUrl: z.string(),
  lastActivityAt: z
    .string()
    .nullable()
    .describe(
      'when the session last took a message or command, or a task of it started or ended: the order of the list ' +
        '(null for a session from before it was kept, listed last)'
    ),
  projectDir: z
    .string()
    .nullable()
    .describe('the project directory its tools work in (null: started before it was kept)'),
  host: z
    .string()
    .nullable()
    .describe(
      'on a cluster: the worker host that holds its project, or group:<id> for a group of hosts that share it ' +
        '(null: one machine, or started before it was kept)'
    ),
});
export const HostProjectSchema = z.object({
  projectDir: z.string(),
  sessions: z.number().int().describe('its sessions on the host (awake, asleep or closed)'),
  lastActivityAt: z.string().nullable().describe("the latest activity of those sessions (GET /sessions' order)"),
});
export const HostListSchema = z.object({
  hosts: z.array(
    z.object({
      hostId: z.string(),
      taskQueue: z
        .string()
        .describe('the task queue its workers poll for the activities of its projects (klea-host-<id>)'),
      status: z
        .enum(['ok', 'gone'])
        .describe('ok: a worker of the host polls its queue now; gone: none does (its tasks wait for it)'),
      pollers: z.number().int(),
      roots: z.array(z.string()).optional().describe('the project roots the host says it holds'),
      group: z.string().optional().describe('the group of hosts it shares its projects with, if any'),
      projects: z.array(HostProjectSchema).describe('the projects of its sessions, most recently active first'),
    })
  ),
  groups: z
    .array(
      z.object({
        groupId: z.string(),
        taskQueue: z.string().describe('the task queue every host of the group polls (klea-group-<id>)'),
        hosts: z.array(z.string()).describe('its hosts that poll now'),
        projects: z.array(HostProjectSchema).describe('the projects of its sessions, most recently active first'),
      })
    )
    .optional()
    .describe('on a cluster with groups of hosts that share projects: each group and the projects of its sessions'),
  complete: z
    .boolean()
    .describe('false when there were more sessions than one listing reads: the projects shown are the newest'),
});
export const SessionListSchema = z.object({
  sessions: z.array(SessionListItemSchema),
  nextCursor: z.string().nullable().describe('pass as cursor for the next page; null on the last page'),
});
