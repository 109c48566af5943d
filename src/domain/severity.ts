import { Schema } from "effect"

/** Severity, lowest to highest. The order of this tuple is the order of the scale. */
export const SEVERITIES = ["low", "medium", "high", "critical"] as const
export const Severity = Schema.Literal(...SEVERITIES)
export type Severity = typeof Severity.Type

/** Event confidence values. */
export const CONFIDENCES = ["low", "normal", "high"] as const
export const Confidence = Schema.Literal(...CONFIDENCES)
export type Confidence = typeof Confidence.Type

export const severityRank = (s: Severity): number => SEVERITIES.indexOf(s)

/** The higher of two severities (an incident's severity is the highest of its events). */
export const maxSeverity = (a: Severity, b: Severity): Severity => (severityRank(a) >= severityRank(b) ? a : b)

/** A channel receives an incident whose severity is at least its minimum. */
export const meetsMinimum = (severity: Severity, minimum: Severity): boolean =>
  severityRank(severity) >= severityRank(minimum)
