/**
 * The modules every workflow run shares. A worker evaluates this module once, before its first run (worker/bundle.ts
 * preloads it); the SDK then deep-freezes what it loaded, and every run uses those frozen modules rather than
 * evaluating its own copies. That is most of what a new run used to cost, in time and in the memory a parked task
 * keeps (bench/memory.ts).
 *
 * Shared code must hold no state of a run: nothing here or in what it imports may keep a mutable value at module
 * level (lint refuses module-level `let`, `var` and collections under workflows/ and common/). Modules a run should
 * have its own copy of, such as the OpenTelemetry API that a traced run configures, are loaded by the run itself
 * (shared/tracing-interceptors.ts).
 *
 * The `common/` modules the workflows reach are completed here (common/zod-setup.ts), so that their schemas parse
 * once frozen. test/unit/shared-modules.test.ts checks that this list names every one of them.
 */
import * as workflows from '../index';
import * as tracing from './tracing-interceptors';
import * as commandOutput from '../../common/command-output';
import * as events from '../../common/events';
import * as failures from '../../common/failures';
import * as firstPick from '../../common/first-pick';
import * as glob from '../../common/glob';
import * as home from '../../common/home';
import * as modelProtocol from '../../common/model-protocol';
import * as pathGuard from '../../common/path-guard';
import * as planDiff from '../../common/plan-diff';
import * as plan from '../../common/plan';
import * as posixPath from '../../common/posix-path';
import * as rewind from '../../common/rewind';
import * as sandboxStatus from '../../common/sandbox-status';
import * as searchAttributes from '../../common/search-attributes';
import * as session from '../../common/session';
import * as settings from '../../common/settings';
import * as status from '../../common/status';
import * as task from '../../common/task';
import * as textDiff from '../../common/text-diff';
import * as tools from '../../common/tools';
import * as zodIssues from '../../common/zod-issues';
import { completeSchemas } from '../../common/zod-setup';

/** Every `common/` module a workflow imports, by name (the test compares this with the imports). */
export const SHARED_COMMON_MODULES = {
  'command-output': commandOutput,
  events,
  failures,
  'first-pick': firstPick,
  glob,
  home,
  'model-protocol': modelProtocol,
  'path-guard': pathGuard,
  'plan-diff': planDiff,
  plan,
  'posix-path': posixPath,
  rewind,
  'sandbox-status': sandboxStatus,
  'search-attributes': searchAttributes,
  session,
  settings,
  status,
  task,
  'text-diff': textDiff,
  tools,
  'zod-issues': zodIssues,
};

completeSchemas([workflows, tracing, ...Object.values(SHARED_COMMON_MODULES)]);
