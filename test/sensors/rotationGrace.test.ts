import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Either } from "effect"
import { asOperator } from "../../src/admin/actor.ts"
import { SensorAdmin } from "../../src/admin/SensorAdmin.ts"
import { admin, adminJson } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D43 "the old token keeps working for a grace period you choose": a rotation never ends a running grace unless the
 * operator says so (`--force`, or the console's "End the earlier grace now"), and two rotations at the same moment
 * never both keep the same old token (the token current until the update is copied inside the update itself).
 */

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer({ env: await testEnv() })
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

const newSensor = async (name: string) => {
  const orgId = (await adminJson(server.env, ["org", "create", "--name", `${name} ${crypto.randomUUID().slice(0, 8)}`]))
    .id as string
  return (await adminJson(server.env, ["sensor", "create", "--org", orgId, "--name", "s-1"])) as {
    id: string
    token: string
  }
}

const accepted = async (token: string) =>
  (await ingest(server.ingestUrl, "events", token, nativeEvent())).status === 200

const rotate = (sensorId: string, grace: string | undefined, force: boolean) =>
  db.run(Effect.either(asOperator(Effect.flatMap(SensorAdmin, (sensors) => sensors.rotate(sensorId, grace, force)))))

const rotateDetails = (sensorId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ detail: string }>`
        select detail from audit_log where target = ${sensorId} and action = 'sensor.rotate' order by id`,
    ),
  )

describe("a rotation and a running grace", () => {
  test("a second rotation during a grace is refused (the old token keeps working); --force ends that grace, audited", async () => {
    const sensor = await newSensor("Grace kept")
    const first = await adminJson(server.env, ["sensor", "rotate", sensor.id, "--grace", "1h"])
    const refused = await admin(server.env, ["sensor", "rotate", sensor.id, "--grace", "1h"])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("still works until")
    expect(refused.stderr).toContain("--force")
    expect(refused.stdout).not.toContain("dst_")
    // Nothing changed: the original token (in its grace) and the first rotation's token both work.
    expect(await accepted(sensor.token)).toBe(true)
    expect(await accepted(first.token)).toBe(true)

    const forced = await adminJson(server.env, ["sensor", "rotate", sensor.id, "--grace", "1h", "--force"])
    expect(await accepted(sensor.token)).toBe(false)
    expect(await accepted(first.token)).toBe(true)
    expect(await accepted(forced.token)).toBe(true)
    const details = (await rotateDetails(sensor.id)).map((r) => r.detail)
    expect(details).toHaveLength(2)
    expect(details[0]).not.toContain("earlier grace ended")
    expect(details[1]).toContain("the earlier grace ended")
  })

  test("a rotation after the grace ended needs no --force", async () => {
    const sensor = await newSensor("Grace over")
    await adminJson(server.env, ["sensor", "rotate", sensor.id, "--grace", "1s"])
    await Bun.sleep(1100)
    const next = await admin(server.env, ["sensor", "rotate", sensor.id])
    expect(next.code).toBe(0)
  })

  test("two rotations with a grace at the same moment: one wins, the other is refused; nothing is lost", async () => {
    for (let round = 0; round < 3; round++) {
      const sensor = await newSensor(`Race ${round}`)
      const results = await Promise.all([rotate(sensor.id, "1h", false), rotate(sensor.id, "1h", false)])
      const won = results.filter(Either.isRight)
      expect({ round, won: won.length }).toEqual({ round, won: 1 })
      const winner = won[0]
      if (winner === undefined || Either.isLeft(winner)) throw new Error("no winner")
      expect(await accepted(winner.right.token)).toBe(true)
      expect(await accepted(sensor.token)).toBe(true)
    }
  })

  test("two forced rotations at the same moment: each keeps the token current just before it, so both new tokens work", async () => {
    for (let round = 0; round < 3; round++) {
      const sensor = await newSensor(`Forced race ${round}`)
      const [a, b] = await Promise.all([rotate(sensor.id, "1h", true), rotate(sensor.id, "1h", true)])
      if (a === undefined || b === undefined || Either.isLeft(a) || Either.isLeft(b)) throw new Error("refused")
      // The later one kept the earlier one's token as its previous: both work; the original ended.
      expect({ round, a: await accepted(a.right.token), b: await accepted(b.right.token) }).toEqual({
        round,
        a: true,
        b: true,
      })
      expect(await accepted(sensor.token)).toBe(false)
    }
  })
})
