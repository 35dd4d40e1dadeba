/** The running activity's context, for code that also runs outside one (tests call activities directly). */
import { Context } from '@temporalio/activity';

/** The current activity's context, or none outside an activity. */
export function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}
