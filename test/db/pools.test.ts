import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { type Socket, SQL } from "bun"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createSensor, createTenant } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { MACHINE_POSTGRES_URL, newPostgresDatabase, type OwnDatabase } from "../support/postgres.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D37 through the real server on a real PostgreSQL: the read API and the ingest listener have separate connection
 * pools, so an API whose pool is exhausted never fails a sensor post; a 503 says whether the database is busy (no
 * connection free in time, or a query time-out) or cannot be reached, and both carry Retry-After.
 *
 * The server reaches PostgreSQL through a TCP relay of this file, so the test can cut the database off. It always
 * runs on a fresh database of the machine's PostgreSQL (TEST_POSTGRES_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres), on an embedded run too: the query time-out and the cut need a
 * PostgreSQL reached over TCP. Without one it fails; it is never skipped.
 */

const target = new URL(MACHINE_POSTGRES_URL)
let own: OwnDatabase | undefined
let database: string

/** A TCP relay to PostgreSQL that can be cut: its listener closed and every relayed connection dropped. */
const startRelay = () => {
  const pairs = new Set<{ client: Socket<{ upstream?: Socket }>; upstream?: Socket }>()
  const listener = Bun.listen<{ upstream?: Socket; pending: Array<Uint8Array> }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        client.data = { pending: [] }
        const pair: { client: Socket<{ upstream?: Socket }>; upstream?: Socket } = { client }
        pairs.add(pair)
        void Bun.connect({
          hostname: target.hostname,
          port: Number(target.port || 5432),
          socket: {
            open(upstream) {
              pair.upstream = upstream
              client.data.upstream = upstream
              for (const chunk of client.data.pending) upstream.write(chunk)
              client.data.pending = []
            },
            data(_upstream, chunk) {
              client.write(chunk)
            },
            close() {
              client.end()
            },
            error() {
              client.end()
            },
          },
        }).catch(() => client.end())
      },
      data(client, chunk) {
        if (client.data.upstream) client.data.upstream.write(chunk)
        else client.data.pending.push(new Uint8Array(chunk))
      },
      close(client) {
        client.data.upstream?.end()
      },
    },
  })
  return {
    port: listener.port,
    cut: () => {
      listener.stop(true)
      for (const pair of pairs) {
        pair.client.terminate()
        pair.upstream?.terminate()
      }
    },
  }
}

let relay: ReturnType<typeof startRelay>
let server: RunningServer
let db: TestDatabase
let direct: SQL
let tenant: { orgId: string; key: string }
let token: string

type Problem = { status: number; code: string; detail: string }

beforeAll(async () => {
  own = await newPostgresDatabase("pools", MACHINE_POSTGRES_URL)
  database = own.name
  const directUrl = new URL(own.url)
  relay = startRelay()
  const relayed = new URL(directUrl)
  relayed.host = `127.0.0.1:${relay.port}`
  // A tiny API pool, so a few held requests exhaust it.
  server = await startServer({
    env: await testEnv({ DATABASE_URL: relayed.toString(), DATABASE_POOL_API: "2", DATABASE_POOL_INGEST: "4" }),
  })
  db = testDatabase({ ...server.env, DATABASE_URL: directUrl.toString() })
  direct = new SQL({ url: directUrl.toString(), max: 2 })
  tenant = await createTenant(db)
  token = (await createSensor(db, tenant.orgId)).token
})

afterAll(async () => {
  await direct?.close()
  await shutdown(server, db)
  await own?.drop()
})

describe("separate pools", () => {
  test("each listener's connections are named after its pool in pg_stat_activity", async () => {
    // One request on each listener opens a connection of each pool.
    expect(
      (await fetch(`${server.url}/v1/incidents`, { headers: { authorization: `Bearer ${tenant.key}` } })).status,
    ).toBe(200)
    expect((await ingest(server.ingestUrl, "events", token, nativeEvent())).status).toBe(200)
    const rows: Array<{ application_name: string }> = await direct`
      select distinct application_name from pg_stat_activity where datname = ${database}`
    const names = rows.map((r) => r.application_name)
    expect(names).toContain("decoy-incident-service/api")
    expect(names).toContain("decoy-incident-service/ingest")
  })

  test("API pool exhausted (its queries held by a lock): API answers 503 busy with Retry-After, every sensor post is stored", async () => {
    // Keys never used yet, so each request must read api_keys (no cached credential).
    const keys = await Promise.all(
      Array.from({ length: 5 }, () => createKey(db, tenant.orgId, "incidents:read,events:read")),
    )
    const lock = await direct.reserve()
    await lock`begin`
    await lock`lock table api_keys in access exclusive mode`
    try {
      const api = Promise.all(
        keys.map(async (key) => {
          const res = await fetch(`${server.url}/v1/incidents`, { headers: { authorization: `Bearer ${key.key}` } })
          return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as Problem }
        }),
      )
      // While the API's two connections wait on the lock and its other requests wait for them: sensors post.
      await Bun.sleep(300)
      const posts: Array<number> = []
      const started = performance.now()
      for (let i = 0; i < 10; i++) {
        const res = await ingest(server.ingestUrl, "events", token, nativeEvent())
        posts.push(res.body?.accepted === 1 ? res.status : -res.status)
      }
      const postSeconds = (performance.now() - started) / 1000
      const answers = await api
      expect(posts).toEqual(Array(10).fill(200))
      // The posts did not wait for the API's pool (its query time-out is 4 s, its pool wait 2 s).
      expect(postSeconds).toBeLessThan(4)
      for (const answer of answers) {
        expect(answer.status).toBe(503)
        expect(answer.body.code).toBe("unavailable")
        expect(answer.body.detail).toContain("busy")
        expect(answer.body.detail).not.toContain("cannot reach")
        expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1)
      }
      // Both causes of "busy" occurred: a query time-out (the two holding connections) and no connection in time.
      const logged = server.logs.filter((line) => line.includes('"database busy"')).join("\n")
      expect(logged).toContain("Query read timeout")
      expect(logged).toContain("timeout exceeded when trying to connect")
      // The statements the API gave up on do not go on waiting for the lock: PostgreSQL cancels them a second after.
      const waiting = async () =>
        (
          (await direct`
            select count(*)::int as n from pg_stat_activity
            where datname = ${database} and application_name = 'decoy-incident-service/api' and state = 'active'`) as Array<{
            n: number
          }>
        )[0]?.n
      const until = Date.now() + 5_000
      while ((await waiting()) !== 0 && Date.now() < until) await Bun.sleep(100)
      expect(await waiting()).toBe(0)
    } finally {
      await lock`rollback`
      lock.release()
    }
  }, 60_000)

  test("database cut off: API and ingest answer 503 'cannot reach its database' with Retry-After", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read,events:read")
    relay.cut()
    await Bun.sleep(200)
    const api = await fetch(`${server.url}/v1/incidents`, { headers: { authorization: `Bearer ${key.key}` } })
    const apiBody = (await api.json()) as Problem
    expect(api.status).toBe(503)
    expect(apiBody.code).toBe("unavailable")
    expect(apiBody.detail).toContain("cannot reach its database")
    expect(Number(api.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    const post = await ingest(server.ingestUrl, "events", token, nativeEvent())
    expect(post.status).toBe(503)
    expect(post.body.detail).toContain("cannot reach its database")
    expect(Number(post.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
  }, 60_000)
})
