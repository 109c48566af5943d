/**
 * A sensor's status from its heartbeat: pure, so the console, the CLI and the silent-sensor sweep (jobs/) compute it
 * the same way, and the sweep's compare-and-set (SensorsRepo.setHealthIfStill) writes the same rule in SQL.
 */

/** A sensor that expects a heartbeat is `silent` once this many intervals passed without hearing from it. */
export const MISSED_HEARTBEATS = 3

/** A sensor's status as the console, the CLI and the silent-detection sweep see it. */
export type SensorStatus = "alive" | "silent" | "unknown" | "revoked"

/** What the status is computed from (a sensor's row has these columns). */
export interface SensorHeartbeatFacts {
  readonly revokedAt: Date | null
  readonly lastSeenAt: Date | null
  readonly heartbeatIntervalSeconds: number | null
  readonly createdAt: Date
}

/**
 * The status of a sensor at `now`. Revoked wins. Without an expected heartbeat nothing can be concluded
 * (`unknown`, whatever its last contact). With one: `alive` while the last contact is within three intervals,
 * `silent` once it is not (a sensor never heard from counts from its creation, so a new one is `unknown` during its
 * first three intervals, then `silent`).
 */
export const statusOf = (row: SensorHeartbeatFacts, now: Date): SensorStatus => {
  if (row.revokedAt !== null) return "revoked"
  if (row.heartbeatIntervalSeconds === null) return "unknown"
  const allowedMs = row.heartbeatIntervalSeconds * 1000 * MISSED_HEARTBEATS
  const since = row.lastSeenAt ?? row.createdAt
  if (now.getTime() - since.getTime() <= allowedMs) return row.lastSeenAt === null ? "unknown" : "alive"
  return "silent"
}
