import { HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, Option, Stream } from "effect"
import type { CursorPosition } from "../domain/cursor.ts"

/**
 * CSV as the console exports it (RFC 4180): fields separated by commas, records ended by CRLF, a field quoted when it
 * holds a quote, a comma, a CR or an LF, and a quote inside a quoted field doubled.
 *
 * The cells hold attacker text (usernames, commands, request paths) and a spreadsheet runs a cell that starts with
 * `=`, `+`, `-` or `@` as a formula, and some also after a leading tab, CR, LF or other whitespace (a space, a
 * no-break space U+00A0, an ideographic space U+3000) or quotes, or take the full-width `＝` `＋` `－` `＠` (U+FF1D,
 * U+FF0B, U+FF0D, U+FF20) for them: such a cell is written with a leading `'`, which the spreadsheet shows as text.
 *
 * A cell does not always stay one cell. A spreadsheet set to split on `;` (Excel in many locales) reads our quotes
 * only where one of its own fields starts, so it starts a new cell after each `;` inside ours, and a new row at each
 * line break after that; one that splits on `,` without reading quotes starts a cell after each `,`. So
 * `a;=HYPERLINK(…)` would give a cell `=HYPERLINK(…)`. A `'` is therefore also put right after a `;`, a `,` or a line
 * break that is followed by a formula character, after any spaces, tabs or quotes: `a;'=HYPERLINK(…)`.
 *
 * A text that already has a `'` at such a place gets one more, so the marks always come off exactly. The `'` stays in
 * the value a program reads back; `csvText` takes the marks off again.
 */

// A formula character, ASCII or full-width.
const FORMULA = String.raw`[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]`
// At a cell's start: a tab, CR or LF, or any whitespace (\s covers space, U+00A0 and U+3000) or quotes and then a
// formula character. A `'` already there counts as part of what is marked.
const START = String.raw`(?:[\t\r\n]|[\s"]*${FORMULA})`
// After a separator a spreadsheet may split on (a CRLF is one): whitespace other than a line break (a line break is
// a separator of its own, and the mark goes after the last one) or quotes, and then a formula character.
const SEPARATOR = String.raw`(\r\n|[;,\r\n])`
const AFTER = String.raw`(?:[^\S\r\n]|")*${FORMULA}`
const CELL_START = new RegExp(`^'*${START}`)
const AFTER_SEPARATOR = new RegExp(`${SEPARATOR}('*${AFTER})`, "g")
const MARK_AT_START = new RegExp(`^'(?='*${START})`)
const MARK_AFTER_SEPARATOR = new RegExp(`${SEPARATOR}'(?='*${AFTER})`, "g")
const NEEDS_QUOTES = /[",\r\n]/

/** A text with the marks `csvCell` puts in: a `'` at each place a spreadsheet could start a formula. */
export const neutralise = (text: string): string =>
  (CELL_START.test(text) ? "'" : "") + text.replace(AFTER_SEPARATOR, "$1'$2")

/**
 * The exact text of a cell read back from an export: the marks `csvCell` put in, taken off again. The ones after a
 * separator first: a mark after a line break can stand between a cell's first mark and the formula character it is for.
 */
export const csvText = (cell: string): string => cell.replace(MARK_AFTER_SEPARATOR, "$1").replace(MARK_AT_START, "")

/** One cell's text, neutralised (a `'` before each formula start) and quoted when RFC 4180 needs it. */
export const csvCell = (value: string | number | boolean | null | undefined): string => {
  if (value === null || value === undefined) return ""
  const text = typeof value === "string" ? value : String(value)
  const safe = neutralise(text)
  return NEEDS_QUOTES.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe
}

/** One record, CRLF-terminated. */
export const csvRecord = (cells: ReadonlyArray<string | number | boolean | null | undefined>): string =>
  `${cells.map(csvCell).join(",")}\r\n`

/**
 * Parses RFC 4180 text back into records (tests and anyone checking an export). Strict: a quote inside an unquoted
 * field, or text after a closing quote, is an error. The trailing CRLF of the last record ends it; no empty record
 * follows.
 */
export const parseCsv = (text: string): Array<Array<string>> => {
  const records: Array<Array<string>> = []
  let record: Array<string> = []
  let i = 0
  const n = text.length
  if (n === 0) return records
  for (;;) {
    let field = ""
    if (text[i] === '"') {
      i++
      for (;;) {
        if (i >= n) throw new Error("CSV: a quoted field is not closed")
        const c = text[i] as string
        if (c === '"') {
          if (text[i + 1] === '"') {
            field += '"'
            i += 2
            continue
          }
          i++
          break
        }
        field += c
        i++
      }
    } else {
      while (i < n && text[i] !== "," && text[i] !== "\r" && text[i] !== "\n") {
        if (text[i] === '"') throw new Error("CSV: a quote inside an unquoted field")
        field += text[i]
        i++
      }
    }
    record.push(field)
    if (i >= n) {
      records.push(record)
      return records
    }
    if (text[i] === ",") {
      i++
      continue
    }
    if (text[i] === "\r" && text[i + 1] === "\n") i += 2
    else if (text[i] === "\n") i++
    else throw new Error(`CSV: unexpected ${JSON.stringify(text[i])} after a field`)
    records.push(record)
    record = []
    if (i >= n) return records
  }
}

// --- Exports: a list as a CSV file, streamed -----------------------------------------------------------------------

/** The most rows one export holds; past it a last line says the export was cut (narrow the filter for the rest). */
export const EXPORT_MAX_ROWS = 100_000
/** Rows read per statement: one keyset page of the list's own statement at a time, never the whole result. */
const EXPORT_PAGE_ROWS = 200

/**
 * A CSV body streamed page by page: the header line, then each page of `read` (after the last row of the one
 * before) as it is sent, at most EXPORT_MAX_ROWS rows; when more exist, a last line `# cut at … rows`.
 */
export const csvStream = <Row, E>(
  columns: ReadonlyArray<string>,
  read: (after: CursorPosition | undefined, fetch: number) => Effect.Effect<ReadonlyArray<Row>, E>,
  position: (row: Row) => CursorPosition,
  record: (row: Row) => string,
): Stream.Stream<Uint8Array, E> => {
  type State = { readonly after: CursorPosition | undefined; readonly sent: number } | "cut"
  const pages = Stream.paginateChunkEffect<State, string, E, never>({ after: undefined, sent: 0 }, (state) => {
    if (state === "cut") {
      return Effect.succeed([
        Chunk.of(`# cut at ${EXPORT_MAX_ROWS} rows: narrow the filter to export the rest\r\n`),
        Option.none(),
      ] as const)
    }
    const room = EXPORT_MAX_ROWS - state.sent
    const fetch = Math.min(EXPORT_PAGE_ROWS, room)
    return Effect.map(read(state.after, fetch + 1), (rows) => {
      const shown = rows.slice(0, fetch)
      const last = shown[shown.length - 1]
      const text = shown.map(record).join("")
      const more = rows.length > fetch && last !== undefined
      const next: Option.Option<State> = !more
        ? Option.none()
        : fetch === room
          ? Option.some("cut")
          : Option.some({ after: position(last), sent: state.sent + shown.length })
      return [text === "" ? Chunk.empty<string>() : Chunk.of(text), next] as const
    })
  })
  return Stream.encodeText(Stream.concat(Stream.make(csvRecord(columns)), pages))
}

export const csvResponse = <E>(name: string, body: Stream.Stream<Uint8Array, E>) =>
  HttpServerResponse.stream(body, {
    contentType: "text/csv; charset=utf-8",
    headers: {
      "content-disposition": `attachment; filename="${name}-${new Date().toISOString().slice(0, 10)}.csv"`,
      "cache-control": "no-store",
      "x-export-row-limit": String(EXPORT_MAX_ROWS),
    },
  })
