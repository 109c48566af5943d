import { expect, test } from "bun:test"
import { RUN_MIN, runDetail, type TimelineEvent, timelineItems } from "../../src/domain/timelineGroups.ts"

/** The timeline's runs: consecutive events of one type grouped, what varied named, nothing lost or reordered. */

let n = 0
const ev = (
  type: string,
  attackerInput: Record<string, unknown> = {},
  severity = "low",
): TimelineEvent & { n: number } => ({
  n: n++,
  type,
  time: new Date(Date.UTC(2026, 10, 26, 8, 0, n)),
  severity,
  attackerInput,
})

test("30 login attempts in a row are one run naming the usernames tried; the events around it stay single", () => {
  const users = [...Array(9).fill("root"), ...Array(6).fill("admin"), ...Array.from({ length: 15 }, (_, i) => `u${i}`)]
  const connect = ev("ssh.session")
  const logins = users.map((u, i) =>
    ev(
      "ssh.login_attempt",
      { username: u, password: { masked: "***", length: 3, fingerprint: "" } },
      i === 3 ? "medium" : "low",
    ),
  )
  const success = ev("ssh.login_success", { username: "root" }, "high")
  const items = timelineItems([connect, ...logins, success])
  expect(items.map((i) => i.kind)).toEqual(["event", "run", "event"])
  const run = items[1]
  if (run?.kind !== "run") throw new Error("expected a run")
  expect(run.events).toEqual(logins)
  expect(run.type).toBe("ssh.login_attempt")
  expect(run.first).toEqual(logins[0]?.time as Date)
  expect(run.last).toEqual(logins[29]?.time as Date)
  expect(run.severity).toBe("medium")
  expect(run.detail?.noun).toBe("usernames")
  expect(run.detail?.distinct).toBe(17)
  expect(run.detail?.top.slice(0, 2)).toEqual([
    { value: "root", count: 9 },
    { value: "admin", count: 6 },
  ])
  expect(run.detail?.top).toHaveLength(5)
})

test("runs shorter than the minimum stay single events, in order; every event appears exactly once", () => {
  const events = [
    ...Array.from({ length: RUN_MIN - 1 }, () => ev("portscan.syn", { dpt: "22" })),
    ev("ssh.command", { command: "id" }),
    ...Array.from({ length: RUN_MIN }, (_, i) => ev("portscan.syn", { dpt: String(20 + i) })),
  ]
  const items = timelineItems(events)
  expect(items.map((i) => i.kind)).toEqual([...Array(RUN_MIN).fill("event"), "run"])
  const flat = items.flatMap((i) => (i.kind === "run" ? i.events : [i.event]))
  expect(flat).toEqual(events)
  const run = items[RUN_MIN]
  expect(run?.kind === "run" && run.detail?.noun).toBe("ports")
  expect(timelineItems([])).toEqual([])
})

test("what varied is the first member the run carries as text or a number; masked secrets and objects are not counted", () => {
  expect(
    runDetail([ev("x", { password: { masked: "*", length: 1, fingerprint: "" } }), ev("x", { other: { a: 1 } })]),
  ).toBe(undefined)
  expect(runDetail([ev("x", { dpt: 22 }), ev("x", { dpt: "22" }), ev("x", { dpt: 23 })])).toEqual({
    member: "dpt",
    noun: "ports",
    one: "port",
    distinct: 2,
    top: [
      { value: "22", count: 2 },
      { value: "23", count: 1 },
    ],
  })
})
