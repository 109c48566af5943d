/**
 * CSV as the console exports it (RFC 4180): fields separated by commas, records ended by CRLF, a field quoted when it
 * holds a quote, a comma, a CR or an LF, and a quote inside a quoted field doubled.
 *
 * The cells hold attacker text (usernames, commands, request paths) and a spreadsheet runs a cell that starts with
 * `=`, `+`, `-` or `@` as a formula, and some also after a leading tab, CR, LF or other whitespace (a space, a
 * no-break space U+00A0, an ideographic space U+3000), or take the full-width `＝` `＋` `－` `＠` (U+FF1D, U+FF0B, U+FF0D,
 * U+FF20) for them: such a cell is written with a leading `'`, which the spreadsheet shows as text. The `'` stays in
 * the value a program reads back; a reader that needs the exact text strips one leading `'` before one of those.
 */

// A tab, CR or LF first; or any whitespace (\s covers space, U+00A0 and U+3000) and then a formula character,
// ASCII or full-width.
const FORMULA_START = /^(?:[\t\r\n]|\s*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/
const NEEDS_QUOTES = /[",\r\n]/

/** One cell's text, neutralised (a leading `'` before a formula start) and quoted when RFC 4180 needs it. */
export const csvCell = (value: string | number | boolean | null | undefined): string => {
  if (value === null || value === undefined) return ""
  const text = typeof value === "string" ? value : String(value)
  const safe = FORMULA_START.test(text) ? `'${text}` : text
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
