import { isRecord } from "../domain/json.ts"

/**
 * The bodies of OpenCanary's own `WebhookHandler` (opencanary/logger.py). It formats each log record (the
 * JSON line, `json.dumps(logdata, sort_keys=True)`) as `message` and posts, through Python Requests:
 * - no `data` configured, no JSON header (the default): `data={"message": line}`, a form body `message=<line>`
 *   (`application/x-www-form-urlencoded`);
 * - a JSON `Content-Type` header: `json={"message": line}`, the body `{"message": "<line as a JSON string>"}`;
 * - `data: "%(message)s"` with a JSON header: `json=line`, the body a JSON string whose content is the line;
 * - `data: "%(message)s"` without: the line itself (no Content-Type).
 * Each form gives back the line; an item that is already a line (has `logtype`) is left as it is. Pure.
 */

const utf8Encoder = new TextEncoder()
const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

/** Strict decoding of one form field: `+` is a space, `%XX` a byte, and the bytes must be UTF-8. */
const decodeFormComponent = (text: string): string | undefined => {
  const plus = text.replace(/\+/g, " ")
  if (!plus.includes("%")) return plus
  const bytes: Array<number> = []
  for (let i = 0; i < plus.length; i++) {
    const c = plus.charCodeAt(i)
    if (c === 0x25) {
      const hex = plus.slice(i + 1, i + 3)
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return undefined
      bytes.push(Number.parseInt(hex, 16))
      i += 2
    } else if (c < 0x80) {
      bytes.push(c)
    } else {
      // The body was decoded as strict UTF-8 already, so a code point here is whole.
      const ch = String.fromCodePoint(plus.codePointAt(i) ?? 0xfffd)
      bytes.push(...utf8Encoder.encode(ch))
      i += ch.length - 1
    }
  }
  try {
    return strictUtf8.decode(new Uint8Array(bytes))
  } catch {
    return undefined
  }
}

export type FormLines =
  | { readonly _tag: "Lines"; readonly lines: ReadonlyArray<string> }
  | { readonly _tag: "Invalid"; readonly reason: string }

/**
 * The `message` fields of a form body, in order (OpenCanary sends one). Other fields are ignored. A field whose
 * escapes are malformed or decode to bytes that are not UTF-8 refuses the body: a byte is never replaced.
 */
export const formMessages = (body: string): FormLines => {
  const lines: Array<string> = []
  for (const pair of body.split("&")) {
    if (pair === "") continue
    const eq = pair.indexOf("=")
    const name = decodeFormComponent(eq < 0 ? pair : pair.slice(0, eq))
    const value = eq < 0 ? "" : decodeFormComponent(pair.slice(eq + 1))
    if (name === undefined || value === undefined) {
      return {
        _tag: "Invalid",
        reason: "a form field is not well-formed (a malformed %-escape, or bytes that are not UTF-8)",
      }
    }
    if (name === "message") lines.push(value)
  }
  if (lines.length === 0) {
    return { _tag: "Invalid", reason: "the form body has no message field: OpenCanary sends message=<the JSON line>" }
  }
  return { _tag: "Lines", lines }
}

/** Whether a Content-Type names a form body (any parameters after it). */
export const isFormBody = (contentType: string | undefined): boolean =>
  (contentType ?? "").split(";")[0]?.trim().toLowerCase() === "application/x-www-form-urlencoded"

const parseLine = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/**
 * One body item as the OpenCanary line it carries: a JSON string is parsed as the line; `{"message": "<line>"}`
 * (an object without `logtype` whose `message` is a string) gives the parsed message. Anything else is returned
 * unchanged, and the mapper says what is wrong with it. A string that is not JSON stays a string (rejected by the
 * mapper with its reason).
 */
export const unwrapOpenCanaryItem = (item: unknown): unknown => {
  if (typeof item === "string") {
    const parsed = parseLine(item)
    return parsed.ok ? parsed.value : item
  }
  if (isRecord(item) && !("logtype" in item) && typeof item.message === "string") {
    const parsed = parseLine(item.message)
    return parsed.ok ? parsed.value : item.message
  }
  return item
}
