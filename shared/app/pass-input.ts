/**
 * What a scheduled pass is invoked with: the schedule's input names the cluster (one schedule
 * per cluster and pass; a single-cluster stack's schedules name none). Anything else the
 * schedule adds (`pass`, `scheduledTime`) is for the logs and ignored.
 */
import { z } from 'zod';

/** A pass invocation's input. */
export const passInput = z.object({ cluster: z.string().min(1).optional() });

/** A parsed `passInput`. */
export type PassInput = z.infer<typeof passInput>;
