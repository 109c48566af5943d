import { Schema } from "effect"

/** Where a delivery stands: pending (queued or waiting for a retry), failed, succeeded or dead. */
export const DeliveryStatus = Schema.Literal("pending", "failed", "succeeded", "dead")
export type DeliveryStatus = typeof DeliveryStatus.Type

/**
 * Pure: what a delivery becomes after one attempt. A 2xx is success; a 410 stops retries (dead at once);
 * any other failure waits the next step of the schedule (5 s, 30 s, 2 min, … 24 h by default) plus up to 10 %
 * jitter, so receivers coming back after an outage are not hit by every sender in the same second; when the
 * schedule is used up the delivery is dead (kept, visible and re-drivable by an admin).
 */
export interface AttemptResult {
  readonly ok: boolean
  readonly status: number | null
}

export interface NextState {
  readonly status: DeliveryStatus
  readonly retryIndex: number
  readonly nextAttemptAt: Date
  readonly deliveredAt: Date | null
}

export const JITTER = 0.1

export const nextState = (
  result: AttemptResult,
  retryIndex: number,
  scheduleMs: ReadonlyArray<number>,
  now: Date,
  random: number = Math.random(),
): NextState => {
  if (result.ok) return { status: "succeeded", retryIndex, nextAttemptAt: now, deliveredAt: now }
  const wait = scheduleMs[retryIndex]
  if (result.status === 410 || wait === undefined) {
    return { status: "dead", retryIndex, nextAttemptAt: now, deliveredAt: null }
  }
  const jittered = Math.round(wait * (1 + JITTER * Math.min(1, Math.max(0, random))))
  return {
    status: "failed",
    retryIndex: retryIndex + 1,
    nextAttemptAt: new Date(now.getTime() + jittered),
    deliveredAt: null,
  }
}
