/** Small, pure helpers for values that came from JSON.parse. */

/** A plain JSON object (not null, not an array). */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v)

/**
 * JSON.parse without throwing. A RangeError from absurdly deep nesting counts as invalid too: such a value is simply
 * not an acceptable JSON value.
 */
export const tryParse = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}
