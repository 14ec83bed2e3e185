// activeSchedules — what the scheduler keeps in memory at boot: every organization's unpaused schedules with
// their next fire time (the definition is read again when one fires), over schedules_due (0006).
import type { Store } from '../store.js';

export interface ActiveSchedule {
  id: string;
  organization_id: string;
  cron_expression: string;
  timezone: string;
  next_run_at: Date | string;
}

export async function activeSchedules(store: Store): Promise<ActiveSchedule[]> {
  return store.query<ActiveSchedule>(
    'SELECT id, organization_id, cron_expression, timezone, next_run_at FROM schedules WHERE NOT paused AND next_run_at IS NOT NULL',
  );
}
