import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { eventTypeSpec } from "../../src/domain/eventTypes.ts"
import { COWRIE_EVENTIDS, COWRIE_UNKNOWN_ACTION } from "../../src/ingest/formats/cowrie.ts"
import { MONGODB_ACTIONS, OPENCANARY_LOGTYPES, OPENCANARY_UNKNOWN_TYPE } from "../../src/ingest/formats/opencanary.ts"

/**
 * D42: "What each honeypot line becomes" in docs/connect-a-sensor.md is the code's tables in a reader's words, and
 * cannot drift from them: every Cowrie eventid (COWRIE_EVENTIDS), OpenCanary logtype (OPENCANARY_LOGTYPES) and
 * MongoDB action (MONGODB_ACTIONS) is in exactly one row, with the outcome and the event type the code gives it; the
 * guide names nothing the code does not know; and what an unknown line becomes is said too.
 */

const GUIDE = readFileSync(join(import.meta.dir, "..", "..", "docs", "connect-a-sensor.md"), "utf8")

/** The rows (key cell, outcome cell) of the first table after `heading`. */
const tableAfter = (heading: string): ReadonlyArray<{ keys: string; outcome: string }> => {
  const at = GUIDE.indexOf(heading)
  expect(at).toBeGreaterThanOrEqual(0)
  const lines = GUIDE.slice(at).split("\n")
  const first = lines.findIndex((line) => line.startsWith("|"))
  const rows: Array<{ keys: string; outcome: string }> = []
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith("|")) break
    const cells = line.split("|").map((cell) => cell.trim())
    rows.push({ keys: cells[1] ?? "", outcome: cells[2] ?? "" })
  }
  expect(rows.length).toBeGreaterThan(0)
  return rows
}

const code = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string)

/** The logtypes a row names: single numbers and ranges such as 99000–99009. */
const logtypesOf = (cell: string): ReadonlyArray<number> =>
  [...cell.matchAll(/\b(\d{4,5})(?:–(\d{4,5}))?\b/g)].flatMap((m) => {
    const from = Number(m[1])
    const to = m[2] === undefined ? from : Number(m[2])
    return Array.from({ length: to - from + 1 }, (_, i) => from + i)
  })

const cowrieRows = tableAfter("### Cowrie (`eventid`)")
const openCanaryRows = tableAfter("### OpenCanary (`logtype`)")
const mongoRows = tableAfter("MongoDB (logtype 20001) writes every line under one logtype")

describe("docs/connect-a-sensor.md lists every honeypot line as the code maps it", () => {
  test("every Cowrie eventid is in one row, with its outcome and event type", () => {
    const wrong: Array<string> = []
    for (const [eventid, outcome] of COWRIE_EVENTIDS) {
      const rows = cowrieRows.filter((row) => code(row.keys).includes(eventid))
      if (rows.length !== 1) {
        wrong.push(`${eventid}: in ${rows.length} rows`)
        continue
      }
      const cell = (rows[0] as { outcome: string }).outcome
      if (!cell.startsWith(outcome.outcome)) wrong.push(`${eventid}: "${cell}" is not ${outcome.outcome}`)
      if (outcome.outcome === "accepted") {
        if (!code(cell).includes(`*.${outcome.action}`)) wrong.push(`${eventid}: "${cell}" lacks *.${outcome.action}`)
        // The type exists for at least one of the protocols a session can have.
        const known = ["ssh", "telnet"].some((p) => eventTypeSpec(`${p}.${outcome.action}`) !== undefined)
        if (!known) wrong.push(`${eventid}: no event type *.${outcome.action}`)
      }
    }
    expect(wrong).toEqual([])
  })

  test("the Cowrie table names no eventid the code does not know, and says what an unknown one becomes", () => {
    const named = cowrieRows.flatMap((row) => code(row.keys)).filter((name) => name.startsWith("cowrie."))
    expect(named.filter((name) => name !== "cowrie.*" && !COWRIE_EVENTIDS.has(name))).toEqual([])
    const unknown = cowrieRows.find((row) => code(row.keys).includes("cowrie.*"))
    expect(unknown?.outcome).toStartWith("accepted")
    expect(code(unknown?.outcome ?? "")).toContain(`*.${COWRIE_UNKNOWN_ACTION}`)
  })

  test("every OpenCanary logtype is in one row, with its outcome and event type", () => {
    const wrong: Array<string> = []
    for (const [logtype, outcome] of OPENCANARY_LOGTYPES) {
      const rows = openCanaryRows.filter((row) => logtypesOf(row.keys).includes(logtype))
      if (rows.length !== 1) {
        wrong.push(`${logtype}: in ${rows.length} rows`)
        continue
      }
      const cell = (rows[0] as { outcome: string }).outcome
      if (!cell.startsWith(outcome.outcome)) wrong.push(`${logtype}: "${cell}" is not ${outcome.outcome}`)
      if (outcome.outcome === "accepted" && !code(cell).includes(outcome.type))
        wrong.push(`${logtype}: "${cell}" lacks ${outcome.type}`)
    }
    expect(wrong).toEqual([])
  })

  test("a logtype the code does not list (user modules' 99000–99009, a later version's) is a generic event", () => {
    expect(eventTypeSpec(OPENCANARY_UNKNOWN_TYPE)).toBeDefined()
    const unlisted = openCanaryRows.flatMap((row) =>
      logtypesOf(row.keys)
        .filter((logtype) => !OPENCANARY_LOGTYPES.has(logtype))
        .map((logtype) => ({ logtype, row })),
    )
    expect(unlisted.map((u) => u.logtype)).toEqual(Array.from({ length: 10 }, (_, i) => 99000 + i))
    for (const { row } of unlisted) {
      expect(row.outcome).toStartWith("accepted")
      expect(code(row.outcome)).toContain(OPENCANARY_UNKNOWN_TYPE)
      expect(row.keys).toContain("any logtype this version does not know")
    }
  })

  test("every MongoDB action is in one row, with its outcome and event type", () => {
    const wrong: Array<string> = []
    for (const [action, outcome] of MONGODB_ACTIONS) {
      const rows = mongoRows.filter((row) => code(row.keys).includes(action))
      if (rows.length !== 1) {
        wrong.push(`${action}: in ${rows.length} rows`)
        continue
      }
      const cell = (rows[0] as { outcome: string }).outcome
      if (!cell.startsWith(outcome.outcome)) wrong.push(`${action}: "${cell}" is not ${outcome.outcome}`)
      if (outcome.outcome === "accepted" && !code(cell).includes(outcome.type))
        wrong.push(`${action}: "${cell}" lacks ${outcome.type}`)
    }
    expect(wrong).toEqual([])
    expect(mongoRows.flatMap((row) => code(row.keys)).filter((a) => !MONGODB_ACTIONS.has(a))).toEqual([])
  })
})
