import { describe, expect, test } from "bun:test"
import { StoredId } from "../../src/domain/ids.ts"
import type { Severity } from "../../src/domain/severity.ts"
import {
  type CurrentIncident,
  type Decision,
  decide,
  type EventContribution,
  type IncidentAggregate,
  MAX_USERNAMES,
  merge,
  transitionsOf,
} from "../../src/ingest/rules.ts"

/**
 * Pure unit tests of the grouping rules (src/ingest/rules.ts): which incident an event joins (D12), how the
 * incident's aggregate changes (D3), and which transitions that records (D12, D15). The idle close (D13) lives in
 * IncidentsRepo and is not tested here.
 */

const T0 = Date.UTC(2026, 10, 21, 15, 0, 0, 0)
const WINDOW = 7 * 24 * 3600_000 // REOPEN_WINDOW's default (D12)

const at = (offsetMs: number) => new Date(T0 + offsetMs)

const contribution = (overrides: Partial<EventContribution> = {}): EventContribution => ({
  time: at(0),
  type: "ssh.login_attempt",
  severity: "medium",
  confidence: "normal",
  tags: [],
  username: undefined,
  ...overrides,
})

const incident = (overrides: Partial<CurrentIncident> = {}): CurrentIncident => ({
  id: StoredId.IncidentId.make("inc_01JD0000000000000000000000"),
  status: "open",
  severity: "medium",
  eventCount: 3,
  eventTypes: ["ssh.login_attempt"],
  tags: [],
  usernames: ["root"],
  typeCounts: { "ssh.login_attempt": 3 },
  eventsSeverity: "medium",
  baitCredential: false,
  sourceScope: "external",
  sourceNetwork: null,
  linked: false,
  highConfidence: false,
  firstSeenAt: at(0),
  lastSeenAt: at(60_000),
  resolvedAt: null,
  ...overrides,
})

/** A closed incident resolved `agoMs` before `now`. */
const closedAgo = (now: number, agoMs: number, overrides: Partial<CurrentIncident> = {}) =>
  incident({ status: "closed", resolvedAt: new Date(now - agoMs), ...overrides })

describe("decide", () => {
  test("no incident for the key yet: create", () => {
    expect(decide(undefined, T0, WINDOW)).toEqual({ kind: "create" })
  })

  test("the key's newest incident is open: join it (whatever its age or severity)", () => {
    const open = incident({ lastSeenAt: at(-400 * 24 * 3600_000), severity: "critical" })
    expect(decide(open, T0, WINDOW)).toEqual({ kind: "join", incident: open })
  })

  test("a closed incident resolved within REOPEN_WINDOW re-opens", () => {
    const now = T0 + 3600_000
    for (const ago of [0, 1, 60_000, 3600_000, 3 * 24 * 3600_000]) {
      const closed = closedAgo(now, ago)
      expect({ ago, decision: decide(closed, now, WINDOW) }).toEqual({
        ago,
        decision: { kind: "reopen", incident: closed },
      })
    }
  })

  test("window edge as the code has it today: resolved exactly REOPEN_WINDOW ago still re-opens (inclusive)", () => {
    const now = T0 + 30 * 24 * 3600_000
    const edge = (ago: number) => decide(closedAgo(now, ago), now, WINDOW).kind
    expect(edge(WINDOW - 1)).toBe("reopen")
    expect(edge(WINDOW)).toBe("reopen")
    expect(edge(WINDOW + 1)).toBe("create")
    // The same boundary with a small window, so the comparison is not an artefact of large numbers.
    const small = (ago: number) => decide(closedAgo(now, ago), now, 3000).kind
    expect([small(2999), small(3000), small(3001)]).toEqual(["reopen", "reopen", "create"])
  })

  test("a closed incident resolved outside the window: a new incident", () => {
    const now = T0 + 60 * 24 * 3600_000
    for (const ago of [WINDOW + 1, WINDOW + 60_000, 2 * WINDOW, 50 * 24 * 3600_000]) {
      expect({ ago, kind: decide(closedAgo(now, ago), now, WINDOW).kind }).toEqual({ ago, kind: "create" })
    }
  })

  test("the window is measured back from now (the arrival), not from the incident's lastSeenAt", () => {
    // Last activity long ago, but resolved a minute ago (an admin close, D13): still within the window.
    const now = T0 + 100 * 24 * 3600_000
    const closed = closedAgo(now, 60_000, { lastSeenAt: at(0) })
    expect(decide(closed, now, WINDOW).kind).toBe("reopen")
    // Recent activity, but resolved longer ago than the window: a new incident.
    const stale = closedAgo(now, WINDOW + 1, { lastSeenAt: new Date(now - 1000) })
    expect(decide(stale, now, WINDOW).kind).toBe("create")
  })

  test("a closed incident without resolvedAt never re-opens", () => {
    expect(decide(incident({ status: "closed", resolvedAt: null }), T0, WINDOW)).toEqual({ kind: "create" })
  })

  test("a zero window re-opens only an incident resolved at this very millisecond", () => {
    expect(decide(closedAgo(T0, 0), T0, 0).kind).toBe("reopen")
    expect(decide(closedAgo(T0, 1), T0, 0).kind).toBe("create")
  })
})

describe("merge into a new incident", () => {
  test("eventCount, severity = highest, highConfidence, first/last seen, status open, resolvedAt null", () => {
    const after = merge(undefined, [
      contribution({ time: at(5_000), severity: "low", type: "ssh.session" }),
      contribution({ time: at(1_000), severity: "high", type: "ssh.login_success", confidence: "high" }),
      contribution({ time: at(9_000), severity: "medium" }),
    ])
    expect(after).toMatchObject({
      status: "open",
      severity: "high",
      eventCount: 3,
      highConfidence: true,
      firstSeenAt: at(1_000),
      lastSeenAt: at(9_000),
      resolvedAt: null,
    })
  })

  test("severity is the highest of the events whatever their order (low < medium < high < critical)", () => {
    const order: ReadonlyArray<Severity> = ["low", "medium", "high", "critical"]
    for (const [i, expected] of order.entries()) {
      const events = order.slice(0, i + 1).map((severity) => contribution({ severity }))
      expect(merge(undefined, events).severity).toBe(expected)
      expect(merge(undefined, [...events].reverse()).severity).toBe(expected)
    }
  })

  test("highConfidence: false when no event is high, true when any one is (low and normal do not count)", () => {
    expect(
      merge(undefined, [contribution({ confidence: "low" }), contribution({ confidence: "normal" })]),
    ).toMatchObject({ highConfidence: false })
    expect(
      merge(undefined, [
        contribution({ confidence: "low" }),
        contribution({ confidence: "high" }),
        contribution({ confidence: "normal" }),
      ]).highConfidence,
    ).toBe(true)
  })

  test("eventTypes and tags: each once, sorted, whatever the arrival order", () => {
    const after = merge(undefined, [
      contribution({ type: "ssh.login_attempt", tags: ["scanner", "default-credentials"] }),
      contribution({ type: "ssh.command", tags: ["system-discovery", "scanner"] }),
      contribution({ type: "ssh.login_attempt", tags: [] }),
      contribution({ type: "portscan.syn", tags: ["default-credentials"] }),
    ])
    expect(after.eventTypes).toEqual(["portscan.syn", "ssh.command", "ssh.login_attempt"])
    expect(after.tags).toEqual(["default-credentials", "scanner", "system-discovery"])
    expect(after.eventCount).toBe(4)
  })

  test("usernames: each once, in first-seen order, at most MAX_USERNAMES; events without one add none", () => {
    const names = ["root", "admin", "root", "", "pi", "oracle", "ubnt", "guest", "admin"]
    const after = merge(
      undefined,
      names.map((username) => contribution({ username: username === "" ? undefined : username })),
    )
    expect(MAX_USERNAMES).toBe(5)
    expect(after.usernames).toEqual(["root", "admin", "pi", "oracle", "ubnt"])
    expect(after.eventCount).toBe(names.length)
  })

  test("first/last seen: earliest and latest event time even when events arrive out of order", () => {
    const times = [40_000, -20_000, 90_000, 0, 10_000]
    const after = merge(
      undefined,
      times.map((t) => contribution({ time: at(t) })),
    )
    expect(after.firstSeenAt).toEqual(at(-20_000))
    expect(after.lastSeenAt).toEqual(at(90_000))
  })

  test("a single event: first and last seen are its time", () => {
    const after = merge(undefined, [contribution({ time: at(123) })])
    expect(after).toMatchObject({ eventCount: 1, firstSeenAt: at(123), lastSeenAt: at(123), severity: "medium" })
  })
})

describe("merge into an existing incident (join and re-open)", () => {
  test("counts add up; types, tags and usernames are unions; severity never drops", () => {
    const base = incident({
      severity: "high",
      eventCount: 7,
      eventTypes: ["ssh.login_attempt", "ssh.session"],
      tags: ["scanner"],
      usernames: ["root", "admin"],
    })
    const after = merge(base, [
      contribution({ type: "portscan.syn", severity: "low", tags: ["recon", "scanner"], username: "admin" }),
      contribution({ type: "ssh.login_attempt", severity: "medium", username: "pi" }),
    ])
    expect(after).toMatchObject({
      severity: "high",
      eventCount: 9,
      eventTypes: ["portscan.syn", "ssh.login_attempt", "ssh.session"],
      tags: ["recon", "scanner"],
      usernames: ["root", "admin", "pi"],
    })
  })

  test("usernames stay at most MAX_USERNAMES; the existing ones are kept first", () => {
    const base = incident({ usernames: ["a", "b", "c", "d"] })
    const after = merge(base, [contribution({ username: "e" }), contribution({ username: "f" })])
    expect(after.usernames).toEqual(["a", "b", "c", "d", "e"])
  })

  test("highConfidence stays true once set; becomes true when a joining event is high", () => {
    expect(merge(incident({ highConfidence: true }), [contribution({ confidence: "low" })]).highConfidence).toBe(true)
    expect(merge(incident({ highConfidence: false }), [contribution({ confidence: "normal" })]).highConfidence).toBe(
      false,
    )
    expect(merge(incident({ highConfidence: false }), [contribution({ confidence: "high" })]).highConfidence).toBe(true)
  })

  test("an older event moves firstSeenAt back, not lastSeenAt; a newer one moves lastSeenAt only", () => {
    const base = incident({ firstSeenAt: at(0), lastSeenAt: at(60_000) })
    const older = merge(base, [contribution({ time: at(-30_000) })])
    expect([older.firstSeenAt, older.lastSeenAt]).toEqual([at(-30_000), at(60_000)])
    const inside = merge(base, [contribution({ time: at(30_000) })])
    expect([inside.firstSeenAt, inside.lastSeenAt]).toEqual([at(0), at(60_000)])
    const newer = merge(base, [contribution({ time: at(90_000) })])
    expect([newer.firstSeenAt, newer.lastSeenAt]).toEqual([at(0), at(90_000)])
    // A batch arriving out of order, straddling both ends.
    const both = merge(base, [contribution({ time: at(120_000) }), contribution({ time: at(-1) })])
    expect([both.firstSeenAt, both.lastSeenAt]).toEqual([at(-1), at(120_000)])
  })

  test("re-opening a closed incident: status open, resolvedAt null, aggregate continued", () => {
    const base = incident({ status: "closed", resolvedAt: at(120_000), eventCount: 4, severity: "medium" })
    const after = merge(base, [contribution({ time: at(200_000), severity: "low" })])
    expect(after).toMatchObject({
      status: "open",
      resolvedAt: null,
      eventCount: 5,
      severity: "medium",
      firstSeenAt: base.firstSeenAt,
      lastSeenAt: at(200_000),
    })
  })

  test("the inputs are not mutated", () => {
    const base = incident({ usernames: ["root"], eventTypes: ["ssh.login_attempt"], tags: ["scanner"] })
    const snapshot = structuredClone(base)
    const events = [contribution({ username: "admin", type: "ssh.command", tags: ["recon"] })]
    const eventsSnapshot = structuredClone(events)
    merge(base, events)
    expect(base).toEqual(snapshot)
    expect(events).toEqual(eventsSnapshot)
  })
})

describe("transitionsOf", () => {
  const aggregate = (severity: Severity): IncidentAggregate => ({ ...incident(), severity })

  test("create: one `created` transition from nothing to the new severity", () => {
    const after = merge(undefined, [contribution({ severity: "high" })])
    expect(transitionsOf({ kind: "create" }, after)).toEqual([
      { kind: "created", fromSeverity: null, toSeverity: "high" },
    ])
  })

  test("join where the severity rises: one `escalated` transition from the old to the new severity", () => {
    const current = incident({ severity: "medium" })
    const decision: Decision = { kind: "join", incident: current }
    const after = merge(current, [contribution({ severity: "critical" })])
    expect(transitionsOf(decision, after)).toEqual([
      { kind: "escalated", fromSeverity: "medium", toSeverity: "critical" },
    ])
    // Every rise, one step or several.
    const order: ReadonlyArray<Severity> = ["low", "medium", "high", "critical"]
    for (const [i, from] of order.entries()) {
      for (const to of order.slice(i + 1)) {
        expect(
          transitionsOf({ kind: "join", incident: incident({ severity: from }) }, aggregate(to)).map(
            (t) => `${t.kind}:${t.fromSeverity}->${t.toSeverity}`,
          ),
        ).toEqual([`escalated:${from}->${to}`])
      }
    }
  })

  test("join at the same or a lower event severity: no transition", () => {
    const current = incident({ severity: "high" })
    const decision: Decision = { kind: "join", incident: current }
    for (const severity of ["low", "medium", "high"] as const) {
      const after = merge(current, [contribution({ severity })])
      expect(after.severity).toBe("high")
      expect({ severity, transitions: transitionsOf(decision, after) }).toEqual({ severity, transitions: [] })
    }
  })

  test("re-open: exactly one `reopened` transition, carrying the new severity also when it rose", () => {
    const closed = incident({ status: "closed", resolvedAt: at(0), severity: "medium" })
    const decision: Decision = { kind: "reopen", incident: closed }
    expect(transitionsOf(decision, merge(closed, [contribution({ severity: "low" })]))).toEqual([
      { kind: "reopened", fromSeverity: "medium", toSeverity: "medium" },
    ])
    expect(transitionsOf(decision, merge(closed, [contribution({ severity: "critical" })]))).toEqual([
      { kind: "reopened", fromSeverity: "medium", toSeverity: "critical" },
    ])
  })

  test("decide, merge and transitionsOf together: create, join, escalate, close, re-open, then a new incident", () => {
    const now = T0 + 1000
    let current: CurrentIncident | undefined
    const step = (events: ReadonlyArray<EventContribution>, nowMs: number) => {
      const decision = decide(current, nowMs, WINDOW)
      const after = merge(decision.kind === "create" ? undefined : decision.incident, events)
      const id = decision.kind === "create" ? StoredId.IncidentId.make(`inc_new_${nowMs}`) : decision.incident.id
      current = { ...after, id, sourceScope: "external", sourceNetwork: null, linked: false }
      return { kind: decision.kind, id, transitions: transitionsOf(decision, after).map((t) => t.kind) }
    }
    const created = step([contribution({ severity: "low" })], now)
    expect(created).toMatchObject({ kind: "create", transitions: ["created"] })
    expect(step([contribution({ severity: "low" })], now + 1)).toEqual({
      kind: "join",
      id: created.id,
      transitions: [],
    })
    expect(step([contribution({ severity: "high" })], now + 2)).toEqual({
      kind: "join",
      id: created.id,
      transitions: ["escalated"],
    })
    // Closed (by an admin or the idle close) at now + 10.
    current = { ...(current as CurrentIncident), status: "closed", resolvedAt: new Date(now + 10) }
    expect(step([contribution()], now + 10 + WINDOW)).toEqual({
      kind: "reopen",
      id: created.id,
      transitions: ["reopened"],
    })
    expect(current?.eventCount).toBe(4)
    current = { ...(current as CurrentIncident), status: "closed", resolvedAt: new Date(now + WINDOW + 20) }
    const fresh = step([contribution()], now + WINDOW + 20 + WINDOW + 1)
    expect(fresh.kind).toBe("create")
    expect(fresh.id).not.toBe(created.id)
    expect(fresh.transitions).toEqual(["created"])
    expect(current?.eventCount).toBe(1)
  })
})
