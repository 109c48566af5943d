import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Duration, Effect } from "effect"
import { ADMISSION_WAIT, weightedRoom } from "../../src/ingest/IngestAdmission.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, walk } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServerProcess, shutdown, startServerProcess, testEnv } from "../support/server.ts"

/**
 * The ingest listener takes in at most INGEST_INFLIGHT_MIB of request bodies at once (a body counts as its declared
 * length, at least 16 KiB; a chunked or compressed one as the 1 MiB a request may hold). A request waits for room
 * before its body is read, first come first served, and is answered busy (503 with Retry-After; HEC's code 9) when
 * none came free in 10 s. Nothing waiting is lost: every admitted request is stored as usual.
 */

const run = <A>(effect: Effect.Effect<A>) => Effect.runPromise(effect)

describe("the room in front of the ingest pipeline", () => {
  test("takes what fits at once, first come first served: a large request is not passed over by smaller ones", async () => {
    const room = weightedRoom(10)
    expect(await run(room.enter(6, 1000))).toBe(true)
    const order: Array<string> = []
    const big = run(room.enter(8, 1000)).then((ok) => order.push(`big ${ok}`))
    // 4 would fit beside the 6 taken, but the 8 came first and waits for room.
    const small = run(room.enter(4, 1000)).then((ok) => order.push(`small ${ok}`))
    await Bun.sleep(20)
    expect(order).toEqual([])
    room.leave(6)
    await big
    expect(order).toEqual(["big true"])
    expect(room.inUse()).toBe(8)
    room.leave(8)
    await small
    expect(order).toEqual(["big true", "small true"])
    room.leave(4)
    expect(room.inUse()).toBe(0)
  })

  test("a wait that runs out takes nothing, and those behind it are let in if they fit", async () => {
    const room = weightedRoom(10)
    expect(await run(room.enter(5, 1000))).toBe(true)
    const big = run(room.enter(10, 50))
    const small = run(room.enter(5, 1000))
    expect(await big).toBe(false)
    expect(await small).toBe(true)
    expect(room.inUse()).toBe(10)
    room.leave(5)
    room.leave(5)
    expect(room.inUse()).toBe(0)
  })

  test("more than the capacity counts as the capacity (it waits for an empty room, never forever)", async () => {
    const room = weightedRoom(10)
    expect(await run(room.enter(50, 10))).toBe(true)
    expect(room.inUse()).toBe(10)
    room.leave(50)
    expect(room.inUse()).toBe(0)
  })
})

let server: RunningServerProcess
let db: TestDatabase
let token: string
let key: string

beforeAll(async () => {
  // 1 MiB: one request of the largest size, or a chunked one, fills the room.
  // A process of its own: the slow client below trickles its body on a timer, and what the test measures (the 10 s
  // wait) must not depend on that timer sharing one event loop with the listener it measures.
  server = await startServerProcess({ env: await testEnv({ INGEST_INFLIGHT_MIB: "1" }) })
  db = testDatabase(server.env)
  const tenant = await createTenant(db, "Admission")
  key = tenant.key
  token = (await createSensor(db, tenant.orgId, "admission-sensor")).token
})

afterAll(() => shutdown(server, db))

const countEvents = async (sourceIp: string) =>
  (await walk(server.url, `/v1/events?limit=100&sourceIp=${sourceIp}`, key)).ids.length

/** Waits until a gauge of the ingest room on the operations listener's /metrics reads `value`. */
const gaugeReads = async (name: "ingest_inflight_bytes" | "ingest_waiting_requests", value: number) => {
  const deadline = Date.now() + 15_000
  for (;;) {
    const text = await (await fetch(`${server.opsUrl}/metrics`)).text()
    const read = Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)?.[1])
    if (read === value) return
    if (Date.now() > deadline) throw new Error(`${name} never read ${value} (last ${read})`)
    await Bun.sleep(50)
  }
}

/**
 * A chunked upload (so it counts as 1 MiB) that sends its events only when told, trickling whitespace meanwhile: in
 * a process of its own (test/support/heldUpload.ts), as the server is, so that neither the trickle nor the wait
 * measured shares an event loop with the other test files of this worker.
 */
const slowUpload = (events: ReadonlyArray<unknown>) => {
  const child = Bun.spawn(["bun", "test/support/heldUpload.ts", server.ingestUrl, token], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  })
  return {
    finish: async () => {
      child.stdin.write(`${JSON.stringify(events)}\n`)
      await child.stdin.end()
      const status = Number((await new Response(child.stdout).text()).trim())
      await child.exited
      return status
    },
  }
}

describe("INGEST_INFLIGHT_MIB on the ingest listener", () => {
  test("a request with no room for 10 s is answered busy (problem 503 with Retry-After; HEC code 9); the one holding the room is stored", async () => {
    const held = slowUpload([nativeEvent({ sourceIp: "198.51.100.71" })])
    // The chunked upload is let in (after its token's lookup) and holds the whole room: /metrics says when.
    await gaugeReads("ingest_inflight_bytes", 1024 * 1024)
    const started = Date.now()
    const answers = Promise.all([
      ingest(server.ingestUrl, "events", token, [nativeEvent({ sourceIp: "198.51.100.72" })]),
      fetch(`${server.ingestUrl}/services/collector/event`, {
        method: "POST",
        headers: { authorization: `Splunk ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ event: nativeEvent({ sourceIp: "198.51.100.73" }) }),
      }),
    ])
    await gaugeReads("ingest_waiting_requests", 2)
    const [native, hec] = await answers
    const waited = Date.now() - started
    // Timed from this process (a busy test worker may start its clock late or read it late): about the wait.
    expect(waited).toBeGreaterThanOrEqual(Duration.toMillis(ADMISSION_WAIT) - 1_000)
    expect(native.status).toBe(503)
    expect(native.headers.get("content-type")).toStartWith("application/problem+json")
    expect(native.headers.get("retry-after")).not.toBeNull()
    expect(native.body.code).toBe("unavailable")
    expect(native.body.detail).toContain("Nothing of it was read or stored")
    expect(hec.status).toBe(503)
    expect(await hec.json()).toEqual({ text: "Server is busy", code: 9 })

    expect(await held.finish()).toBe(200)
    expect(await countEvents("198.51.100.71")).toBe(1)
    expect(await countEvents("198.51.100.72")).toBe(0)
    expect(await countEvents("198.51.100.73")).toBe(0)
    // The room is free again: the next request is let in at once.
    const again = await ingest(server.ingestUrl, "events", token, [nativeEvent({ sourceIp: "198.51.100.72" })])
    expect(again.status).toBe(200)
    expect(await countEvents("198.51.100.72")).toBe(1)
    await gaugeReads("ingest_inflight_bytes", 0)
    await gaugeReads("ingest_waiting_requests", 0)
  }, 40_000)

  test("six batches near the 1 MiB limit posted at once take turns, and every event of each is stored", async () => {
    const batches = Array.from({ length: 6 }, (_, b) =>
      Array.from({ length: 1000 }, (_, i) =>
        nativeEvent({
          sourceIp: `198.51.101.${b + 1}`,
          sensorEventId: `adm-${b}-${i}-${Date.now()}`,
          type: "ssh.command",
          attackerInput: { command: `echo ${"x".repeat(800)}` },
        }),
      ),
    )
    for (const batch of batches) {
      const size = Buffer.byteLength(JSON.stringify(batch))
      expect(size).toBeGreaterThan(800_000)
      expect(size).toBeLessThan(1024 * 1024)
    }
    const answers = await Promise.all(batches.map((batch) => ingest(server.ingestUrl, "events", token, batch)))
    expect(answers.map((a) => [a.status, a.body.accepted])).toEqual(batches.map(() => [200, 1000]))
    for (let b = 0; b < 6; b++) expect(await countEvents(`198.51.101.${b + 1}`)).toBe(1000)
  }, 60_000)

  test("a body answered without being read (a wrong token, a declared length over the bound) leaves the connection usable", async () => {
    const wrong = `${token.slice(0, -4)}${token.endsWith("AAAA") ? "BBBB" : "AAAA"}`
    const big = `[${"1,".repeat(550_000)}1]`
    for (let i = 0; i < 3; i++) {
      const refused = await ingest(server.ingestUrl, "events", wrong, big, true)
      expect(refused.status).toBe(401)
      const tooLarge = await ingest(server.ingestUrl, "events", token, big, true)
      expect(tooLarge.status).toBe(413)
      expect(tooLarge.body.code).toBe("payload_too_large")
      const ok = await ingest(server.ingestUrl, "events", token, [nativeEvent({ sourceIp: "198.51.100.74" })])
      expect(ok.status).toBe(200)
    }
    expect(await countEvents("198.51.100.74")).toBe(3)
  }, 30_000)
})
