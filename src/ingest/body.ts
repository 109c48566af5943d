import { Effect, Stream } from "effect"

/**
 * D22: an ingest body is one JSON value, a JSON array, or NDJSON (one JSON value per line). Pure.
 * A line that is not JSON becomes a rejected item (with its line number); it does not reject the batch.
 */
export const MAX_BODY_BYTES = 1024 * 1024
export const MAX_EVENTS = 1000
/**
 * What Bun itself accepts before our code runs. Far above our limit on purpose: Bun's own refusal is a bare 413
 * without a body, so the limit is ours (readBodyCapped) and every oversized body gets the problem document (D4, D22).
 */
export const SERVER_MAX_BODY_BYTES = 2 ** 40

export type BodyItem = { readonly value: unknown } | { readonly error: string }

export type ParsedBody =
  | { readonly _tag: "Items"; readonly items: ReadonlyArray<BodyItem> }
  | { readonly _tag: "Empty" }
  | { readonly _tag: "TooMany"; readonly count: number }

const tryParse = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    // Includes RangeError from absurdly deep nesting: it is simply not an acceptable JSON value.
    return { ok: false }
  }
}

export const parseBody = (text: string): ParsedBody => {
  const trimmed = text.trim()
  if (trimmed === "") return { _tag: "Empty" }
  const whole = tryParse(trimmed)
  let items: Array<BodyItem>
  if (whole.ok) {
    items = Array.isArray(whole.value) ? whole.value.map((value) => ({ value })) : [{ value: whole.value }]
  } else {
    items = []
    const lines = trimmed.split(/\r?\n/)
    for (const [i, line] of lines.entries()) {
      if (line.trim() === "") continue
      const parsed = tryParse(line)
      items.push(parsed.ok ? { value: parsed.value } : { error: `line ${i + 1} is not valid JSON` })
      if (items.length > MAX_EVENTS) break
    }
  }
  if (items.length > MAX_EVENTS) return { _tag: "TooMany", count: items.length }
  return { _tag: "Items", items }
}

/**
 * Reads a body as it streams in, and stops reading once it holds more than `max` bytes: an oversized body (whatever
 * its size, with or without Content-Length) is never buffered whole. `undefined` means too large.
 */
export const readBodyCapped = <E, R>(
  stream: Stream.Stream<Uint8Array, E, R>,
  max: number,
): Effect.Effect<Uint8Array | undefined, E, R> =>
  Effect.map(
    Stream.runFoldWhile(
      stream,
      { chunks: [] as Array<Uint8Array>, size: 0 },
      (state) => state.size <= max,
      (state, chunk) => {
        state.chunks.push(chunk)
        state.size += chunk.byteLength
        return state
      },
    ),
    (state) => {
      if (state.size > max) return undefined
      const bytes = new Uint8Array(state.size)
      let offset = 0
      for (const chunk of state.chunks) {
        bytes.set(chunk, offset)
        offset += chunk.byteLength
      }
      return bytes
    },
  )
