import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { copyFileSync, mkdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Browser } from "playwright-core"
import { launchBrowser } from "../support/browser.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D38 in a real browser (Debian's Chromium through playwright-core): the API reference at /docs lists the six
 * endpoints (the spec's four and the two change feeds of D32), with no Content-Security-Policy violation, and requests nothing from another host (script, styles,
 * fonts and WebAssembly all come from the service). Its relaxed CSP is for /docs exactly.
 *
 * With UPDATE_SCREENSHOTS=1 (as for the console's) the page's screenshot is copied to docs/screenshots/api-reference.png (the README's).
 */

const ROOT = join(import.meta.dir, "..", "..")

const INCIDENT_SUMMARIES = [
  "List incidents, most recent activity first",
  "Incidents in the order they changed: the feed for pollers",
  "One incident with its first 200 member events, oldest first",
]
const EVENT_SUMMARIES = [
  "List decoy events, newest first",
  "Events in the order they were stored: the feed for pollers",
  "One event",
]

let server: RunningServer
let browser: Browser

beforeAll(async () => {
  server = await startServer()
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  await shutdown(server)
})

describe("/docs", () => {
  test("lists the six endpoints, no CSP violation, nothing requested from another host", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    const violations: Array<string> = []
    const foreign: Array<string> = []
    const failed: Array<string> = []
    const own = new URL(server.url).host
    await page.exposeFunction("reportViolation", (text: string) => violations.push(text))
    // Page-side code as text (the test's TypeScript has no DOM types).
    await page.addInitScript(`document.addEventListener("securitypolicyviolation", (event) => {
      window.reportViolation(event.violatedDirective + " " + event.blockedURI)
    })`)
    page.on("console", (message) => {
      if (/content security policy|refused to/i.test(message.text())) violations.push(message.text())
    })
    page.on("request", (request) => {
      const url = new URL(request.url())
      if (url.protocol.startsWith("http") && url.host !== own) foreign.push(request.url())
    })
    page.on("requestfailed", (request) => failed.push(`${request.url()} ${request.failure()?.errorText}`))

    const response = await page.goto(`${server.url}/docs`, { waitUntil: "load" })
    expect(response?.status()).toBe(200)
    expect(response?.headers()["content-security-policy"]).toContain("'wasm-unsafe-eval'")
    // The sidebar lists the Incidents group open; the Events group opens with a click (Scalar renders lazily).
    const sidebarEntry = (text: string) => page.getByText(text, { exact: true }).first()
    for (const [i, summary] of INCIDENT_SUMMARIES.entries()) {
      await sidebarEntry(summary).waitFor({ state: "visible", timeout: i === 0 ? 60_000 : 10_000 })
    }
    await page.getByText("Events", { exact: true }).first().click()
    for (const [i, summary] of EVENT_SUMMARIES.entries()) {
      await sidebarEntry(summary).waitFor({ state: "visible", timeout: i === 0 ? 30_000 : 10_000 })
    }
    // Let late loads (fonts, lazy chunks) happen before judging.
    await page.waitForLoadState("networkidle", { timeout: 30_000 }).catch(() => undefined)
    expect(violations).toEqual([])
    expect(foreign).toEqual([])
    expect(failed).toEqual([])

    const shot = join(tmpdir(), `api-reference-${process.pid}.png`)
    await page.screenshot({ path: shot })
    if (process.env.UPDATE_SCREENSHOTS === "1") {
      mkdirSync(join(ROOT, "docs", "screenshots"), { recursive: true })
      copyFileSync(shot, join(ROOT, "docs", "screenshots", "api-reference.png"))
    }
    await page.close()
  }, 120_000)

  test("the relaxed policy is for /docs exactly: /docsx and /docs/x get the API's strict one", async () => {
    const docs = await fetch(`${server.url}/docs`)
    await docs.arrayBuffer()
    expect(docs.headers.get("content-security-policy")).toContain("script-src")
    for (const path of ["/docsx", "/docs/x", "/docs.json"]) {
      const res = await fetch(`${server.url}${path}`)
      await res.arrayBuffer()
      expect({ path, csp: res.headers.get("content-security-policy") }).toEqual({
        path,
        csp: "default-src 'none'; frame-ancestors 'none'",
      })
    }
  })
})
