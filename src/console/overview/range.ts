/**
 * The overview's time ranges: the last 24 hours by hour, the last 7 or 30 days by day, all in UTC. Pure: the page's
 * buckets, their labels and where the range starts, from the range's name and the time of the request.
 */

export const RANGES = ["24h", "7d", "30d"] as const
export type OverviewRange = (typeof RANGES)[number]
export const DEFAULT_RANGE: OverviewRange = "24h"

export type BucketUnit = "hour" | "day"

export interface RangeWindow {
  readonly range: OverviewRange
  /** The first moment counted: the start of the first bucket. */
  readonly start: Date
  readonly unit: BucketUnit
  /** The buckets' keys, oldest first, in the form the reads return (`YYYY-MM-DD HH` by hour, `YYYY-MM-DD` by day). */
  readonly buckets: ReadonlyArray<string>
  /** How the range is said in a sentence: "last 24 hours". */
  readonly words: string
}

const HOUR = 3_600_000
const DAY = 86_400_000

/** The range a query asks for (`range=24h|7d|30d`); anything else, or nothing, is the default. */
export const parseRange = (value: string | null | undefined): OverviewRange =>
  (RANGES as ReadonlyArray<string>).includes(value ?? "") ? (value as OverviewRange) : DEFAULT_RANGE

/** The key of the bucket a time falls in, as the reads format it. */
export const bucketKey = (at: Date, unit: BucketUnit): string => {
  const iso = at.toISOString()
  return unit === "hour" ? `${iso.slice(0, 10)} ${iso.slice(11, 13)}` : iso.slice(0, 10)
}

/** The window of a range at `now`: 24 whole hours ending with the current one, or whole days ending with today. */
export const rangeWindow = (range: OverviewRange, now: Date): RangeWindow => {
  if (range === "24h") {
    const first = Math.floor(now.getTime() / HOUR) * HOUR - 23 * HOUR
    return {
      range,
      start: new Date(first),
      unit: "hour",
      buckets: Array.from({ length: 24 }, (_, i) => bucketKey(new Date(first + i * HOUR), "hour")),
      words: "last 24 hours",
    }
  }
  const days = range === "7d" ? 7 : 30
  const first = Math.floor(now.getTime() / DAY) * DAY - (days - 1) * DAY
  return {
    range,
    start: new Date(first),
    unit: "day",
    buckets: Array.from({ length: days }, (_, i) => bucketKey(new Date(first + i * DAY), "day")),
    words: `last ${days} days`,
  }
}

/** A bucket's short label on an axis: `14:00` by hour, `11-26` by day. */
export const bucketLabel = (key: string, unit: BucketUnit): string =>
  unit === "hour" ? `${key.slice(11, 13)}:00` : key.slice(5)

/** A bucket said in full: `2026-11-26 14:00 UTC` by hour, `2026-11-26` by day. */
export const bucketWords = (key: string, unit: BucketUnit): string => (unit === "hour" ? `${key}:00 UTC` : key)
