import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Logger, LogLevel } from "effect"
import { logInfoLine } from "../../src/platform/logging.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { eventually } from "../support/eventually.ts"
import { createTenant } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * What the edge does on every request, written the cheap way, must read exactly as before: the access line written
 * without annotating the fiber, and the request metrics from tagged metrics made once.
 */

describe("the access line without annotating the fiber", () => {
  const fields = {
    method: "GET",
    route: "/v1/incidents",
    status: 200,
    durationMs: 1.25,
    orgId: null,
    keyId: "key_1",
    clientIp: "192.0.2.1",
  }
  // Each line as JSON without what differs between two lines written one after the other (time, fiber).
  const linesOf = (effect: Effect.Effect<void>, level: LogLevel.LogLevel = LogLevel.Info) => {
    const lines: Array<Record<string, unknown>> = []
    const capture = Logger.map(Logger.jsonLogger, (line) => {
      const { timestamp: _t, fiberId: _f, ...rest } = JSON.parse(line) as Record<string, unknown>
      lines.push(rest)
    })
    Effect.runSync(
      effect.pipe(
        Effect.annotateLogs({ listener: "api" }),
        Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
        Logger.withMinimumLogLevel(level),
      ),
    )
    return lines
  }
  const annotated = Effect.logInfo("request").pipe(Effect.annotateLogs(fields))
  const direct = Effect.withFiberRuntime<void>((fiber) => {
    logInfoLine(fiber, "request", fields)
    return Effect.void
  })

  test("is the line logInfo with annotateLogs writes, the fiber's own annotations kept beside the fields", () => {
    const expected = linesOf(annotated)
    expect(expected).toHaveLength(1)
    expect(expected[0]).toMatchObject({ message: "request", logLevel: "INFO", annotations: { listener: "api" } })
    expect(linesOf(direct)).toEqual(expected)
  })

  test("is not written when LOG_LEVEL is above info, as logInfo's is not", () => {
    expect(linesOf(annotated, LogLevel.Warning)).toEqual([])
    expect(linesOf(direct, LogLevel.Warning)).toEqual([])
  })
})

describe("one access line and one count per request", () => {
  let server: RunningServer
  let db: TestDatabase
  let tenant: { orgId: string; key: string }

  beforeAll(async () => {
    server = await startServer()
    db = testDatabase(server.env)
    tenant = await createTenant(db)
  })
  afterAll(() => shutdown(server, db))

  const sample = async (name: string, labels: Record<string, string>) => {
    const text = await (await fetch(`${server.opsUrl}/metrics`)).text()
    const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
    const line = text
      .split("\n")
      .find((l) => l.startsWith(`${name}{`) && wanted.every((w) => l.slice(0, l.indexOf("}")).includes(w)))
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
  }

  test("a request counts once under its route and status, and times once under its route; its line has every field", async () => {
    const ok = { route: "/v1/incidents", status: "200" }
    const refused = { route: "/v1/incidents", status: "401" }
    const before = {
      ok: await sample("http_requests_total", ok),
      refused: await sample("http_requests_total", refused),
      timed: await sample("http_request_duration_seconds_count", { route: "/v1/incidents" }),
      lines: server.logs.filter((l) => l.includes('"message":"request"')).length,
    }
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/v1/incidents`, { headers: { authorization: `Bearer ${tenant.key}` } })
      expect(res.status).toBe(200)
      await res.arrayBuffer()
    }
    const anonymous = await fetch(`${server.url}/v1/incidents`)
    expect(anonymous.status).toBe(401)
    await anonymous.arrayBuffer()
    await eventually(
      "four more request lines",
      () => server.logs.filter((l) => l.includes('"message":"request"')).length >= before.lines + 4,
    )
    expect(await sample("http_requests_total", ok)).toBe(before.ok + 3)
    expect(await sample("http_requests_total", refused)).toBe(before.refused + 1)
    expect(await sample("http_request_duration_seconds_count", { route: "/v1/incidents" })).toBe(before.timed + 4)
    const lines = server.logs
      .filter((l) => l.includes('"message":"request"'))
      .slice(before.lines)
      .map((l) => JSON.parse(l) as { annotations: Record<string, unknown> })
    expect(lines).toHaveLength(4)
    for (const line of lines) {
      expect(Object.keys(line.annotations).sort()).toEqual(
        ["clientIp", "durationMs", "keyId", "method", "orgId", "route", "status"].sort(),
      )
    }
    expect(lines.map((l) => l.annotations.status)).toEqual([200, 200, 200, 401])
  })
})
