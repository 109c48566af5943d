import { adminJson } from "../../test/support/cli.ts"
import { type RunningServerProcess, startServerProcess, testEnvOn } from "../../test/support/server.ts"

/**
 * The service as the fault tests run it: always on the suite's own PostgreSQL (never the test run's DATABASE_URL,
 * never an embedded database), with the test environment of test/support/server.ts otherwise.
 */
export const serviceEnv = (databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> =>
  testEnvOn(databaseUrl, extra)

/** Each server a process of its own: the fault suites kill, restart and balance processes. */
export const startService = (env: Record<string, string>): Promise<RunningServerProcess> => startServerProcess({ env })

/** Stops every server still running (SIGTERM; one already killed just reports its exit code). */
export const stopAll = async (servers: ReadonlyArray<RunningServerProcess | undefined>) => {
  await Promise.all(servers.map((server) => server?.stop()))
}

export interface Tenant {
  readonly orgId: string
  readonly key: string
  readonly sensorId: string
  readonly token: string
}

/**
 * This run's suffix of organization names: the admin tool refuses a second organization of the same name, and the
 * fault suites run again and again against the same PostgreSQL.
 */
const RUN = crypto.randomUUID().slice(0, 8)

/**
 * An organization with a read key and one sensor, made with the admin tool as an operator would. The organization
 * is named `<name> <run suffix>`, so a rerun against the same database (or two tenants of one name) is not refused.
 */
export const createTenant = async (env: Record<string, string>, name: string): Promise<Tenant> => {
  const org = await adminJson(env, ["org", "create", "--name", `${name} ${RUN}`])
  const key = await adminJson(env, [
    "key",
    "create",
    "--org",
    org.id,
    "--name",
    "soar",
    "--scopes",
    "incidents:read,events:read",
  ])
  const sensor = await adminJson(env, ["sensor", "create", "--org", org.id, "--name", "web-01"])
  return { orgId: org.id, key: key.key, sensorId: sensor.id, token: sensor.token }
}

/** A webhook channel of the organization (all severities). */
export const createChannel = async (
  env: Record<string, string>,
  orgId: string,
  url: string,
): Promise<{ id: string; secret: string }> =>
  adminJson(env, ["webhook", "create", "--org", orgId, "--url", url, "--min-severity", "low"])

/** Waits until `check` holds, failing with `what` after `ms`. */
export const eventually = async (what: string, check: () => boolean | Promise<boolean>, ms = 20_000) => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await Bun.sleep(50)
  }
}

/** One HTTP exchange as the fault tests record it. */
export interface Answer {
  readonly status: number
  readonly contentType: string
  // biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
  readonly body: any
  readonly startedAt: number
  readonly endedAt: number
  /** The request was still unanswered after the time limit. */
  readonly timedOut: boolean
  /** A network error (no HTTP answer at all). */
  readonly error: string | undefined
}

/** fetch with a hard time limit (AbortSignal.timeout): a hang becomes `timedOut`, never a stuck test. */
export const timedFetch = async (url: string, init: RequestInit = {}, limitMs = 5_000): Promise<Answer> => {
  const startedAt = Date.now()
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(limitMs) })
    const text = await response.text()
    let body: unknown = text
    try {
      body = JSON.parse(text)
    } catch {}
    return {
      status: response.status,
      contentType: response.headers.get("content-type") ?? "",
      body,
      startedAt,
      endedAt: Date.now(),
      timedOut: false,
      error: undefined,
    }
  } catch (e) {
    const name = e instanceof Error ? e.name : ""
    return {
      status: 0,
      contentType: "",
      body: undefined,
      startedAt,
      endedAt: Date.now(),
      timedOut: name === "TimeoutError" || name === "AbortError",
      error: e instanceof Error ? `${e.name}: ${e.message}` : String(e),
    }
  }
}

/** A compact description of an answer for failure messages. */
export const show = (a: Answer) =>
  a.timedOut
    ? `timed out after ${a.endedAt - a.startedAt} ms`
    : a.error !== undefined
      ? a.error
      : `${a.status} ${a.contentType} ${typeof a.body === "string" ? a.body.slice(0, 200) : JSON.stringify(a.body)}`
