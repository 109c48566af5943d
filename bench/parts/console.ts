import { adminJson } from "../lib/admin.ts"
import { type BenchContext, log, round, serviceEnv } from "../lib/common.ts"
import { memoryFigures, startService } from "../lib/proc.ts"
import type { SeedManifest } from "../lib/seed.ts"
import type { WrkResult } from "../lib/wrk.ts"
import { keyPool, load, type ResponseCheck, statusCounts, type Timing } from "./api.ts"

/**
 * The web console's two busiest pages (D25, D30), signed in, beside the API endpoints that read the same rows, from
 * the same service process in the same minute: `GET /incidents` (first page of the list) against
 * `GET /v1/incidents`, and `GET /incidents/<id>` (the 200-event incident) against `GET /v1/incidents/{id}`.
 *
 * An admin user of the large dataset's organization is made with the admin CLI; its password is set and it signs
 * in over HTTP as a browser would (GET the form for its CSRF token and form cookie, POST with Origin = the
 * console's origin); wrk then sends the session cookie. Every response is checked in wrk (bench/wrk/api.lua): a
 * page counts as answered only if it is a 200 whose HTML holds the signed-in header's sign-out form (a redirect to
 * sign-in is a 303 with no body, so it is a failed check, not a fast success); an API answer only if it is a 200
 * holding the JSON the endpoint returns.
 */

const SIGNED_IN_MARK = 'action="/sign-out"'
const FORM_CSRF = /name="csrf" value="([^"]+)"/

const cookieOf = (response: Response, name: string) =>
  response.headers
    .getSetCookie()
    .find((c) => c.startsWith(`${name}=`))
    ?.split(";")[0]

/** GET a form (its CSRF token and double-submit cookie), POST it with the console's Origin; the 303's response. */
const submitForm = async (consoleUrl: string, path: string, fields: Record<string, string>) => {
  const form = await fetch(`${consoleUrl}${path}`)
  const text = await form.text()
  const csrf = FORM_CSRF.exec(text)?.[1]
  const formCookie = cookieOf(form, "__Host-form")
  if (form.status !== 200 || csrf === undefined || formCookie === undefined) {
    throw new Error(`GET ${path} answered ${form.status} without a form token: ${text.slice(0, 200)}`)
  }
  const response = await fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: formCookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
    body: new URLSearchParams({ csrf, ...fields }),
  })
  if (response.status !== 303) {
    throw new Error(`POST ${path} answered ${response.status}: ${(await response.text()).slice(0, 200)}`)
  }
  return response
}

/** A new admin of `orgId` (the admin CLI), its password set through the one-time link, signed in: the cookie. */
export const signInAdmin = async (ctx: BenchContext, consoleUrl: string, orgId: string) => {
  const email = `bench-console-${Date.now()}@bench.invalid`
  const password = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString("base64url")
  const created = await adminJson<{ link: string }>(serviceEnv(ctx), [
    "user",
    "create",
    "--org",
    orgId,
    "--email",
    email,
    "--role",
    "admin",
  ])
  await submitForm(consoleUrl, new URL(created.link).pathname, { password })
  const signedIn = await submitForm(consoleUrl, "/sign-in", { email, password, next: "/incidents" })
  const session = cookieOf(signedIn, "__Host-session")
  if (session === undefined) throw new Error("sign-in answered 303 without a session cookie")
  return { email, cookie: session }
}

/** One page fetched as wrk will fetch it: status, type, size and how many times `count` occurs in it. */
const probe = async (url: string, headers: Record<string, string>, count: string) => {
  const response = await fetch(url, { headers, redirect: "manual" })
  const body = await response.text()
  return {
    status: response.status,
    contentType: response.headers.get("content-type") ?? "",
    bytes: Buffer.byteLength(body),
    signedIn: body.includes(SIGNED_IN_MARK),
    count: body.split(count).length - 1,
  }
}

export interface ConsoleRow {
  readonly page: string
  readonly api: string
  readonly connections: number
  readonly console: WrkResult
  readonly apiResult: WrkResult
  /** console req/s ÷ API req/s. */
  readonly rpsRatio: number
}

export const runConsole = async (ctx: BenchContext, manifest: SeedManifest, timing: Timing) => {
  const large = manifest.datasets.large
  const keys = keyPool(ctx, large)
  const service = await startService(ctx.workDir, serviceEnv(ctx), ctx.profile, "service-console")
  try {
    const apiUrl = `http://127.0.0.1:${service.ports.api}`
    const consoleUrl = `http://127.0.0.1:${service.ports.console}`
    const { email, cookie } = await signInAdmin(ctx, consoleUrl, large.orgId)
    log(`console: signed in as ${email} (organization ${large.orgId})`)

    const incident = large.fatIncidentId
    const allCases = [
      {
        page: "GET /incidents",
        path: "/incidents",
        api: "GET /v1/incidents",
        apiPath: "/v1/incidents",
        apiMark: '"data":[',
        rowMark: 'href="/incidents/',
      },
      {
        page: "GET /incidents/<id> (200 events)",
        path: `/incidents/${incident}`,
        api: "GET /v1/incidents/{id} (200 events)",
        apiPath: `/v1/incidents/${incident}`,
        apiMark: `"id":"${incident}"`,
        rowMark: "<tr id=",
      },
    ]

    // BENCH_CONSOLE_PAGES=list or =incident: one page (and its API endpoint) only, to tell what each costs alone.
    const pages = process.env.BENCH_CONSOLE_PAGES ?? ""
    const cases =
      pages === "list" || pages === "incident"
        ? allCases.filter((c) => c.path.startsWith("/incidents/") === (pages === "incident"))
        : allCases
    // Before any load: each page is the signed-in HTML with its rows; without the cookie it is a redirect.
    const checks: Record<string, unknown> = {}
    for (const c of cases) {
      const signedIn = await probe(`${consoleUrl}${c.path}`, { cookie }, c.rowMark)
      const signedOut = await probe(`${consoleUrl}${c.path}`, {}, c.rowMark)
      checks[c.page] = { signedIn, signedOutStatus: signedOut.status }
      const html = signedIn.contentType.startsWith("text/html")
      if (signedIn.status !== 200 || !html || !signedIn.signedIn || signedIn.count === 0 || signedOut.status !== 303) {
        throw new Error(`${c.page}: not the signed-in page: ${JSON.stringify(checks[c.page])}`)
      }
      const api = await probe(`${apiUrl}${c.apiPath}`, { authorization: `Bearer ${large.keys[60]}` }, c.apiMark)
      if (api.status !== 200 || api.count === 0) throw new Error(`${c.api}: ${JSON.stringify(api)}`)
      log(`${c.page}: ${signedIn.bytes} bytes of HTML, ${signedIn.count} rows; signed out: ${signedOut.status}`)
    }

    const pageCheck: ResponseCheck = { mustContain: SIGNED_IN_MARK, cookie }
    const rows: Array<ConsoleRow> = []
    for (const c of cases) {
      const apiCheck: ResponseCheck = { mustContain: c.apiMark }
      if (timing.warmupSeconds > 0) {
        await load(apiUrl, c.apiPath, 16, timing.warmupSeconds, keys, apiCheck)
        await load(consoleUrl, c.path, 16, timing.warmupSeconds, undefined, pageCheck)
      }
      for (const connections of [16, 64]) {
        // Interleaved, API first: both see the same machine within seconds of each other.
        const apiResult = await load(apiUrl, c.apiPath, connections, timing.seconds, keys, apiCheck)
        const page = await load(consoleUrl, c.path, connections, timing.seconds, undefined, pageCheck)
        log(
          `${c.page} c=${connections}: console ${page.rps} req/s p50 ${page.latencyMs.p50} p99 ${page.latencyMs.p99} ms (${page.failedChecks} failed checks) | ${c.api} ${apiResult.rps} req/s p50 ${apiResult.latencyMs.p50} p99 ${apiResult.latencyMs.p99} ms`,
        )
        rows.push({
          page: c.page,
          api: c.api,
          connections,
          console: page,
          apiResult,
          rpsRatio: round(page.rps / apiResult.rps, 2),
        })
      }
    }
    const apiStatuses = await statusCounts({ service })
    const stopped = await service.stop()
    return {
      dataset: { events: large.events, incidents: large.incidents, orgId: large.orgId },
      checks,
      rows,
      apiStatuses,
      memory: { service: memoryFigures(stopped) },
      ...(stopped.profile ? { profile: stopped.profile } : {}),
    }
  } catch (error) {
    await service.stop().catch(() => undefined)
    throw error
  }
}
