import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { FetchHttpClient } from "@effect/platform"
import { Effect, Layer, Stream } from "effect"
import { makeClient } from "../../src/client/effect.ts"
import { ApiError, createClient } from "../../src/client/index.ts"
import { signatureHeader } from "../../src/domain/webhookSignature.ts"
import { admin } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createSensor, createTenant } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { cleanup, type RunningServer, startServer, testEnv } from "../support/server.ts"

/**
 * D34: the client against the real server. The server allows 12 requests per 2 s per key and address (D11), so a
 * burst meets 429s, which the client waits out (Retry-After) without the caller seeing them.
 */
const ROOT = join(import.meta.dir, "..", "..")
let server: RunningServer
let db: TestDatabase
let env: Record<string, string>
let tenant: { orgId: string; key: string; keyId: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  env = await testEnv({ RATE_LIMIT: "12", RATE_LIMIT_WINDOW: "2 seconds" })
  server = await startServer({ env })
  db = testDatabase(env)
  tenant = await createTenant(db, "Client Co")
  sensor = await createSensor(db, tenant.orgId, "web-client")
  // 7 incidents with 2 events each.
  for (let i = 0; i < 7; i++) {
    await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: `192.0.2.${100 + i}` }),
      nativeEvent({ sourceIp: `192.0.2.${100 + i}`, type: "ssh.login_success" }),
    ])
  }
})

afterAll(async () => {
  await db?.close()
  await server?.stop()
  if (server) cleanup(server)
})

const collect = async <A>(iterable: AsyncIterable<A>) => {
  const out: Array<A> = []
  for await (const item of iterable) out.push(item)
  return out
}

describe("client", () => {
  test("lists over several pages (async iterators) and gets one; items are typed (Dates)", async () => {
    const client = createClient({ baseUrl: server.url, apiKey: tenant.key })
    const incidents = await collect(client.incidents.list({ limit: 2 }))
    expect(incidents).toHaveLength(7)
    expect(new Set(incidents.map((i) => i.id)).size).toBe(7)
    expect(incidents[0]?.lastSeenAt).toBeInstanceOf(Date)
    const events = await collect(client.events.list({ limit: 3, type: "ssh.login_success" }))
    expect(events).toHaveLength(7)
    const one = await client.incidents.get(incidents[0]?.id ?? "")
    expect(one.events).toHaveLength(2)
    expect((await client.events.get(events[0]?.id ?? "")).id).toBe(events[0]?.id ?? "missing")
  })

  test("a 429 is waited out after Retry-After", async () => {
    const { key } = await createKey(db, tenant.orgId, "incidents:read,events:read")
    // Spend the key's allowance with plain requests until one is refused.
    let refused: Response | undefined
    for (let i = 0; i < 30 && !refused; i++) {
      const res = await fetch(`${server.url}/v1/events?limit=1`, { headers: { authorization: `Bearer ${key}` } })
      await res.arrayBuffer()
      if (res.status === 429) refused = res
    }
    expect(refused?.headers.get("retry-after")).toMatch(/^[0-9]+$/)
    const client = createClient({ baseUrl: server.url, apiKey: key })
    const started = Date.now()
    const events = await collect(client.events.list({ limit: 100 }))
    expect(events).toHaveLength(14)
    expect(Date.now() - started).toBeGreaterThan(200)
  })

  test("typed errors carry the problem code: a revoked key's 401, an unknown id's 404, a bad parameter's 400", async () => {
    const extra = await createKey(db, tenant.orgId, "incidents:read")
    expect((await admin(env, ["key", "revoke", extra.id])).code).toBe(0)
    const revoked = createClient({ baseUrl: server.url, apiKey: extra.key })
    const error = await collect(revoked.incidents.list()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toMatchObject({ status: 401, code: "unauthorized" })
    const client = createClient({ baseUrl: server.url, apiKey: tenant.key })
    await expect(client.incidents.get("inc_nope")).rejects.toMatchObject({ status: 404, code: "not_found" })
    // An id is one path segment: never a way to reach another endpoint.
    await expect(client.events.get("../../v1/events")).rejects.toMatchObject({ status: 404, code: "not_found" })
    await expect(client.incidents.get("x?status=open")).rejects.toMatchObject({ status: 404, code: "not_found" })
    await expect(collect(client.events.list({ limit: 0 }))).rejects.toMatchObject({
      status: 400,
      code: "invalid_request",
    })
    await expect(collect(client.incidents.follow({ after: "forged.token" }))).rejects.toMatchObject({
      status: 400,
      code: "invalid_request",
    })
  })

  test("connection failures are retried with back-off, then raised as status 0 connection_failed", async () => {
    // A port nothing listens on: a free port taken and released.
    const probe = Bun.serve({ port: 0, fetch: () => new Response("") })
    const port = probe.port
    await probe.stop(true)
    const client = createClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: tenant.key,
      maxRetries: 3,
      baseDelayMs: 100,
    })
    const started = Date.now()
    const error = await client.incidents.get("inc_x").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toMatchObject({ status: 0, code: "connection_failed" })
    // Three waits of about 100, 200 and 400 ms (with jitter, at least three quarters of each).
    expect(Date.now() - started).toBeGreaterThanOrEqual(500)
  })

  test("an invalid baseUrl fails at once with a clear error, never retried as a connection failure", async () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      [
        "notaurl",
        'baseUrl must be an absolute http:// or https:// URL, e.g. https://incidents.example.com (got "notaurl", not a URL)',
      ],
      [
        "localhost:8080",
        "baseUrl must be an absolute http:// or https:// URL, e.g. https://incidents.example.com (got a localhost: URL)",
      ],
      [
        "ftp://incidents.example.com",
        "baseUrl must be an absolute http:// or https:// URL, e.g. https://incidents.example.com (got a ftp: URL)",
      ],
      [
        "",
        'baseUrl must be an absolute http:// or https:// URL, e.g. https://incidents.example.com (got "", not a URL)',
      ],
      [
        "https://me:pw-Secret-9@incidents.example.com",
        "baseUrl must be an absolute http:// or https:// URL, e.g. https://incidents.example.com, without user or password",
      ],
    ]
    for (const [baseUrl, detail] of cases) {
      const started = Date.now()
      let thrown: unknown
      try {
        createClient({ baseUrl, apiKey: tenant.key })
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(ApiError)
      expect(thrown).toMatchObject({ status: 0, code: "invalid_base_url", detail })
      expect(String((thrown as Error).message)).not.toContain("pw-Secret-9")
      // The Effect flavour fails the same way, before any request.
      const effect = await Effect.runPromise(
        Effect.flip(makeClient({ baseUrl, apiKey: tenant.key }).pipe(Effect.provide(FetchHttpClient.layer))),
      )
      expect(effect).toMatchObject({ status: 0, code: "invalid_base_url", detail })
      expect(Date.now() - started).toBeLessThan(1_000)
    }
  })

  test("retries are bounded: 503s then a closed port make at most maxRetries + 1 requests", async () => {
    // A real server that refuses with 503 three times, then goes away: later attempts meet a closed port.
    let served = 0
    const flaky = Bun.serve({
      port: 0,
      fetch: () => {
        served++
        if (served >= 3) setTimeout(() => void flaky.stop(true), 0)
        return new Response("{}", { status: 503, headers: { "retry-after": "0" } })
      },
    })
    let sent = 0
    const counting = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      sent++
      return fetch(input, init)
    }) as typeof fetch
    const error = await Effect.runPromise(
      Effect.gen(function* () {
        const client = yield* makeClient({
          baseUrl: `http://127.0.0.1:${flaky.port}`,
          apiKey: tenant.key,
          maxRetries: 6,
          baseDelayMs: 10,
          maxDelayMs: 40,
        })
        return yield* Effect.flip(client.incidents.get("inc_x"))
      }).pipe(Effect.provide(FetchHttpClient.layer), Effect.provide(Layer.succeed(FetchHttpClient.Fetch, counting))),
    )
    await flaky.stop(true)
    expect(error).toMatchObject({ status: 0, code: "connection_failed" })
    expect(served).toBe(3)
    expect(sent).toBe(7)
  })

  test("the Effect flavour: the same calls as Effects and Streams, failures as ApiError", async () => {
    const result = await Effect.runPromise(
      Effect.gen(function* () {
        const client = yield* makeClient({ baseUrl: server.url, apiKey: tenant.key })
        const all = yield* Stream.runCollect(client.incidents.list({ limit: 3 }))
        const firstPage = yield* Stream.runHead(client.events.follow({ limit: 5 }))
        const missing = yield* Effect.flip(client.events.get("evt_nope"))
        return { count: all.length, page: firstPage, missing }
      }).pipe(Effect.provide(FetchHttpClient.layer)),
    )
    expect(result.count).toBe(7)
    expect(result.page._tag).toBe("Some")
    expect(result.missing).toBeInstanceOf(ApiError)
    expect(result.missing.code).toBe("not_found")
  })

  test("follow yields every change and resumes from a saved token after the server restarts", async () => {
    const client = createClient({ baseUrl: server.url, apiKey: tenant.key })
    const controller = new AbortController()
    const follower = client.events.follow({ limit: 4, pollIntervalMs: 100, signal: controller.signal })
    const seen: Array<string> = []
    for await (const event of follower) {
      seen.push(event.id)
      if (seen.length === 14) controller.abort()
    }
    expect(seen).toHaveLength(14)
    const saved = follower.token
    expect(typeof saved).toBe("string")

    await server.stop()
    server = await startServer({ env })
    const more = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "192.0.2.200" }),
      nativeEvent({ sourceIp: "192.0.2.201" }),
    ])
    const newIds = (more.body.results as Array<{ id: string }>).map((r) => r.id)
    const resumed = createClient({ baseUrl: server.url, apiKey: tenant.key })
    const stop = new AbortController()
    const after: Array<string> = []
    for await (const event of resumed.events.follow({ after: saved, pollIntervalMs: 100, signal: stop.signal })) {
      after.push(event.id)
      if (after.length === 2) stop.abort()
    }
    expect(after).toEqual(newIds)
    const incidents: Array<string> = []
    const stopIncidents = new AbortController()
    for await (const incident of resumed.incidents.follow({ signal: stopIncidents.signal, pollIntervalMs: 100 })) {
      incidents.push(incident.sourceIp)
      if (incidents.length === 9) stopIncidents.abort()
    }
    expect(incidents.slice(-2).sort()).toEqual(["192.0.2.200", "192.0.2.201"])
  })

  test("Node users get the built client: `npm pack` builds dist/client (prepack) and packs it; installs build nothing", async () => {
    const packageJson = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
    expect(packageJson.scripts.prepack).toBe("bun run build:client")
    // Not `prepare`: bun install runs a root prepare too, also the Dockerfile's `bun install --production`, which has
    // neither the sources nor tsc, and every CI install would wait for tsc.
    expect(packageJson.scripts.prepare).toBeUndefined()
    const pack = Bun.spawnSync(["npm", "pack", "--dry-run", "--json", "--ignore-scripts=false"], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
    })
    expect(pack.exitCode).toBe(0)
    // The build's own output comes first on stdout, then npm's JSON.
    const out = pack.stdout.toString()
    const listed = JSON.parse(out.slice(out.indexOf("[\n"))) as Array<{ files: Array<{ path: string }> }>
    const files = (listed[0]?.files ?? []).map((file) => file.path)
    for (const built of [
      "dist/client/index.js",
      "dist/client/effect.js",
      "dist/client/types/client/index.d.ts",
      "dist/client/types/client/effect.d.ts",
      "dist/client/webhooks/verify.js",
      "dist/client/types/webhooks/verify.d.ts",
    ]) {
      expect(files).toContain(built)
    }
    // Nothing else of dist/ (the server's build), nor local data, keys or dependencies.
    expect(files.filter((f) => f.startsWith("dist/") && !f.startsWith("dist/client/"))).toEqual([])
    expect(files.filter((f) => /(^|\/)(\.data|node_modules)\/|\.pem$|^\.env$/.test(f))).toEqual([])
  }, 120_000)

  test("the built client (bun run build:client) runs on Node and lists incidents", async () => {
    const build = Bun.spawnSync(["bun", "run", "build:client"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" })
    expect(build.exitCode).toBe(0)
    // The client imports nothing of the service but the API contract (api/contract/) and domain schemas. The bundle names every source module it holds.
    const bundled = new Set<string>()
    for (const file of readdirSync(join(ROOT, "dist", "client")).filter((f) => f.endsWith(".js"))) {
      for (const m of readFileSync(join(ROOT, "dist", "client", file), "utf8").matchAll(/^\/\/ (src\/\S+)$/gm)) {
        bundled.add(m[1] ?? "")
      }
    }
    expect([...bundled].filter((m) => !/^src\/(client\/|domain\/|api\/contract\/)/.test(m))).toEqual([])
    expect(bundled.has("src/api/contract/definition.ts")).toBe(true)
    expect(existsSync(join(ROOT, "dist", "client", "types", "client", "index.d.ts"))).toBe(true)
    // What a user of the package reads (its typings' doc comments, the examples) cites no internal decision or issue.
    const typings = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? typings(join(dir, e.name)) : e.name.endsWith(".d.ts") ? [join(dir, e.name)] : [],
      )
    const read = [
      ...typings(join(ROOT, "dist", "client", "types")),
      ...readdirSync(join(ROOT, "examples"))
        .filter((f) => f.endsWith(".ts"))
        .map((f) => join(ROOT, "examples", f)),
    ]
    expect(read.length).toBeGreaterThan(5)
    const cited = read.flatMap((f) =>
      [...readFileSync(f, "utf8").matchAll(/\bD\d{1,2}\b|issue #\d+/g)].map(
        (m) => `${f.slice(ROOT.length + 1)}: ${m[0]}`,
      ),
    )
    expect(cited).toEqual([])
    const script = `import { createClient } from "decoy-incident-service/client"
      const client = createClient({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY })
      let n = 0
      for await (const incident of client.incidents.list({ limit: 3 })) if (incident.id.startsWith("inc_")) n++
      console.log(JSON.stringify({ n, node: process.version }))`
    // Not spawnSync: the server answers from this process, whose event loop must keep running meanwhile.
    const node = Bun.spawn(["/usr/bin/node", "--input-type=module", "-e", script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", BASE_URL: server.url, API_KEY: tenant.key },
      stdout: "pipe",
      stderr: "pipe",
    })
    const [nodeOut, nodeErr] = await Promise.all([new Response(node.stdout).text(), new Response(node.stderr).text()])
    await node.exited
    expect(nodeErr).toBe("")
    const out = JSON.parse(nodeOut)
    const expected = await collect(createClient({ baseUrl: server.url, apiKey: tenant.key }).incidents.list())
    expect(out.n).toBe(expected.length)
    expect(out.n).toBeGreaterThanOrEqual(7)
    expect(String(out.node)).toStartWith("v2")

    // The receiver SDK too: Node verifies a signature the service's own signer made, through the package's export.
    const body = '{"id":"whd_x","type":"incident.created"}'
    const t = Math.floor(Date.now() / 1000)
    const header = signatureHeader(["whsec_node-test"], t, body)
    const verify = `import { verifyWebhook } from "decoy-incident-service/webhooks/verify"
      const ok = verifyWebhook(process.env.BODY, process.env.HEADER, "whsec_node-test")
      const bad = verifyWebhook(process.env.BODY + " ", process.env.HEADER, "whsec_node-test")
      console.log(JSON.stringify({ ok: ok.ok, bad: bad.ok }))`
    const verified = Bun.spawnSync(["/usr/bin/node", "--input-type=module", "-e", verify], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", BODY: body, HEADER: header },
      stdout: "pipe",
      stderr: "pipe",
    })
    expect(verified.stderr.toString()).toBe("")
    expect(JSON.parse(verified.stdout.toString())).toEqual({ ok: true, bad: false })
  })
})
