import { mkdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"

/**
 * One real Chromium (Debian's /usr/bin/chromium) for the console's browser tests, driven by playwright-core.
 * Launch it once per test file: a launch costs seconds on a loaded machine.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"

export const launchBrowser = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  })

/** Every CSP violation a page reports (the `securitypolicyviolation` event), and every page error. */
export interface PageWatch {
  readonly violations: Array<string>
  readonly errors: Array<string>
}

/**
 * A context whose pages record CSP violations. The recorder is installed by the browser (an init script over the
 * DevTools protocol), which the page's CSP does not govern; it only listens.
 */
export const watchedContext = async (browser: Browser, viewport = { width: 1280, height: 900 }) => {
  const context = await browser.newContext({ viewport })
  const watch: PageWatch = { violations: [], errors: [] }
  await context.exposeBinding("__reportViolation", (_source, text: string) => {
    watch.violations.push(text)
  })
  await context.addInitScript(() => {
    // Runs in the page (no DOM types in this project's TypeScript configuration: described here).
    interface Violation {
      readonly violatedDirective: string
      readonly blockedURI: string
      readonly sample: string
    }
    const page = globalThis as unknown as {
      readonly document: { addEventListener: (type: string, listener: (event: Violation) => void) => void }
      readonly __reportViolation: (text: string) => void
    }
    page.document.addEventListener("securitypolicyviolation", (event) => {
      page.__reportViolation(`${event.violatedDirective} ${event.blockedURI} ${event.sample}`)
    })
  })
  context.on("page", (page) => {
    page.on("pageerror", (error) => watch.errors.push(error.message))
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) watch.violations.push(message.text())
    })
  })
  return { context, watch }
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

interface AxeViolation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly nodes: ReadonlyArray<{ readonly target: ReadonlyArray<string> }>
}

/**
 * axe-core run in the page (its source evaluated over the DevTools protocol, so the page's CSP does not refuse it):
 * the serious and critical violations, as `rule: help (targets)` lines.
 */
export const seriousAccessibilityViolations = async (page: Page): Promise<Array<string>> => {
  await page.evaluate(axeSource)
  const violations = (await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (o: unknown) => Promise<{ violations: unknown }> } }).axe
    const result = await axe.run({ resultTypes: ["violations"] })
    return result.violations
  })) as ReadonlyArray<AxeViolation>
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`)
}

/**
 * Screenshots for the README: written to docs/screenshots/ when UPDATE_SCREENSHOTS=1, otherwise to a temporary
 * folder (a test run does not change the work tree).
 */
export const screenshot = async (page: Page, name: string, dir: string) => {
  const target = process.env.UPDATE_SCREENSHOTS === "1" ? join(import.meta.dir, "..", "..", "docs", "screenshots") : dir
  mkdirSync(target, { recursive: true })
  await page.screenshot({ path: join(target, `${name}.png`), fullPage: true })
}

export type { Browser, BrowserContext, Page }
