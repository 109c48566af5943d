import { readFileSync } from "node:fs"
import { join } from "node:path"

/**
 * Moving a honeypot capture in time: every time in its lines (Cowrie's `timestamp` and HEC `time`, OpenCanary's
 * `local_time`, `utc_time`, `local_time_adjusted`) moves by the same amount, so the capture's last line can be "now"
 * while the attack keeps its own pace.
 */

export type Json = Record<string, unknown>

const OC_TIME_KEYS = ["local_time", "utc_time", "local_time_adjusted"] as const
const ocToMs = (text: string) => Date.parse(`${text.replace(" ", "T").slice(0, 23)}Z`)
const msToOc = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace("Z", "000")

const lineTimeMs = (line: Json): number => {
  if (typeof line.timestamp === "string") return Date.parse(line.timestamp)
  if (typeof line.utc_time === "string") return ocToMs(line.utc_time)
  return Number.NaN
}

/** The line with every time it holds moved by `deltaMs`. */
export const shiftLine = (line: Json, deltaMs: number): Json => {
  const out: Json = { ...line }
  if (typeof out.timestamp === "string") out.timestamp = new Date(Date.parse(out.timestamp) + deltaMs).toISOString()
  if (typeof out.time === "number") out.time = out.time + deltaMs / 1000
  for (const key of OC_TIME_KEYS) {
    if (typeof out[key] === "string") out[key] = msToOc(ocToMs(out[key] as string) + deltaMs)
  }
  return out
}

/** The shift that moves the latest of these lines to one second ago. */
export const deltaToNow = (lines: ReadonlyArray<Json>) =>
  Date.now() - 1000 - Math.max(...lines.map(lineTimeMs).filter((ms) => Number.isFinite(ms)))

/** The lines of a capture file of test/fixtures/real (one JSON object a line). */
export const captureLines = (file: string): Array<Json> =>
  readFileSync(join(import.meta.dir, "..", "fixtures", "real", file), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Json)

/** These lines moved so the last is a second ago, as one request body (a line each). */
export const capturedNow = (lines: ReadonlyArray<Json>): string => {
  const delta = deltaToNow(lines)
  return `${lines.map((l) => JSON.stringify(shiftLine(l, delta))).join("\n")}\n`
}
