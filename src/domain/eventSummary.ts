/**
 * How the service (never a model) words one event, and how it shows attacker text inside its own words.
 *
 * Attacker text never reaches a template raw: the caller cleans it of invisible characters first, and the templates
 * only ever show it quoted (`quoteAttackerText`), so it reads as data and cannot pose as the service's own words.
 */
import { truncateCodePoints } from "./sanitize.ts"

export interface SummaryInput {
  readonly sourceIp: string
  readonly port: number
  readonly service: string
  /** Already-sanitized attacker text; shown quoted. */
  readonly username?: string | undefined
  /** Already-sanitized attacker text (path, command, URL, file name, ...); shown quoted. */
  readonly detail?: string | undefined
}

/** Attacker text shown in a template is cut to this many code points (the cut ends with "…"). */
export const QUOTE_MAX_CODE_POINTS = 64

/**
 * Quotes already-sanitized attacker text for a service-written template: cut to 64 code points (ending in "…" when
 * cut), then written as a JSON string literal, so quotes and backslashes inside are escaped and the text cannot close
 * its own quotation.
 */
export const quoteAttackerText = (s: string): string => JSON.stringify(truncateCodePoints(s, QUOTE_MAX_CODE_POINTS))

const nonEmpty = (s: string | undefined): s is string => s !== undefined && s.length > 0

/**
 * The one-line summary of an event of the type labelled `label`, e.g.
 * `SSH shell command from 203.0.113.7 on port 22 with username "root", command "uname -a"`. The detail is shown only
 * when the type names it (`detailNoun`, e.g. "command").
 */
export const eventSummary = (label: string, detailNoun: string | undefined, e: SummaryInput): string => {
  let line = `${label} from ${e.sourceIp}`
  if (Number.isInteger(e.port) && e.port > 0) line += ` on port ${e.port}`
  if (nonEmpty(e.username)) line += ` with username ${quoteAttackerText(e.username)}`
  if (detailNoun !== undefined && nonEmpty(e.detail)) line += `, ${detailNoun} ${quoteAttackerText(e.detail)}`
  return line
}
