import type { HttpServerRequest } from "@effect/platform"
import { Effect, Stream } from "effect"
import { tryParse } from "../../domain/json.ts"

/**
 * An ingest body is one JSON value, a JSON array, or NDJSON (one JSON value per line). Pure.
 * A line that is not JSON becomes a rejected item (with its line number); it does not reject the batch.
 */
export const MAX_BODY_BYTES = 1024 * 1024
export const MAX_EVENTS = 1000
/**
 * What Bun itself accepts before our code runs. Far above our limit on purpose: Bun's own refusal is a bare 413
 * without a body, so the limit is ours (readBodyCapped) and every oversized body gets the problem document.
 */
export const SERVER_MAX_BODY_BYTES = 2 ** 40

/**
 * Lets go of a request body the handler answered without reading (a refused token, a declared length over the
 * bound, an unknown path). Bun keeps receiving such a body into memory outside the JavaScript heap, freed only when
 * the request object is collected, and the heap's collector does not count it: 16 connections posting 1.1 MB bodies
 * with a wrong sensor token held the ingest listener near 375 MiB (peak 507); cancelling the unread body keeps it
 * at 200. Called once the response is decided; a body already read is left alone.
 */
export const discardUnreadBody = (request: HttpServerRequest.HttpServerRequest): void => {
  const source = request.source as Request
  if (source.bodyUsed || source.body === null) return
  source.body.cancel().catch(() => undefined)
}

export type BodyItem = { readonly value: unknown } | { readonly error: string }

export type ParsedBody =
  | { readonly _tag: "Items"; readonly items: ReadonlyArray<BodyItem> }
  | { readonly _tag: "Empty" }
  | { readonly _tag: "TooMany"; readonly count: number }

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

/**
 * Where well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF, no truncated
 * sequence) first fails: the offset of the byte starting the bad sequence (everything before it is UTF-8), or
 * undefined when all of `bytes` is UTF-8. A body with such a byte is refused whole: replacing it (U+FFFD) could make
 * two different sensorEventIds one.
 */
export const invalidUtf8Offset = (bytes: Uint8Array): number | undefined => {
  let i = 0
  const n = bytes.length
  while (i < n) {
    const b = bytes[i] as number
    if (b < 0x80) {
      i++
      continue
    }
    let need: number
    let min: number
    let max = 0xbf
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1
      min = 0x80
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2
      min = b === 0xe0 ? 0xa0 : 0x80 // E0: no overlong forms
      if (b === 0xed) max = 0x9f // ED: no surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3
      min = b === 0xf0 ? 0x90 : 0x80 // F0: no overlong forms
      if (b === 0xf4) max = 0x8f // F4: nothing above U+10FFFF
    } else {
      return i // a continuation byte without a lead, C0, C1 or F5–FF
    }
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k]
      if (c === undefined) return i // truncated at the end of the body
      if (k === 1 ? c < min || c > max : c < 0x80 || c > 0xbf) return i
    }
    i += need + 1
  }
  return undefined
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

/** The body as text, or the offset of its first byte that is not UTF-8. */
export const decodeUtf8 = (bytes: Uint8Array): { readonly text: string } | { readonly invalidAt: number } => {
  try {
    return { text: strictUtf8.decode(bytes) }
  } catch {
    return { invalidAt: invalidUtf8Offset(bytes) ?? 0 }
  }
}
