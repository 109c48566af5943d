import { afterAll, beforeAll, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { TwoFactor } from "../../src/admin/TwoFactor.ts"
import type { UserId } from "../../src/domain/ids.ts"
import { verifyWebhook } from "../../src/webhooks/verify.ts"
import { admin, adminJson } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createChannel, createKey, createOrg, createSensor, createUser, get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type OwnDatabase, ownDatabaseOnPostgresRun } from "../support/postgres.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { cleanup, type RunningServer, startServer, TEST_SECRET_KEY, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * Issue "Signed webhooks" 1: secrets are sealed under SECRET_KEY "with a key id, so the master key can be rotated".
 * Rotation: start with the new SECRET_KEY and the old one in SECRET_KEY_PREVIOUS, run `admin secrets reseal`, then
 * drop the old key. Channel secrets (D16) and fingerprint keys (D19) survive every step.
 */

const NEW_KEY = "b".repeat(64)
let receiver: Receiver
let env: Record<string, string>
let server: RunningServer | undefined
let ownDatabase: OwnDatabase | undefined

beforeAll(async () => {
  const certs = makeTestCertificate({ ipAddresses: ["127.0.0.1"] })
  const caFile = join(tmpdir(), `dsvc-rekey-ca-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
  env = await testEnv({
    WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
    WEBHOOK_CA_FILE: caFile,
    WEBHOOK_POLL_INTERVAL: "200 millis",
  })
  // Resealing touches every organization: on PostgreSQL this file gets a database of its own.
  ownDatabase = await ownDatabaseOnPostgresRun("rekey")
  if (ownDatabase) env.DATABASE_URL = ownDatabase.url
})

afterAll(async () => {
  await server?.stop()
  if (server) cleanup(server)
  receiver?.stop()
  await ownDatabase?.drop()
})

/** The user's two-factor secret as enrolment shows it (the one stored, opened; a new one when none opens). */
const twoFactorSecretOf = async (db: TestDatabase, user: { id: string; email: string }) =>
  (await db.run(Effect.flatMap(TwoFactor, (t) => t.beginEnrolment({ userId: user.id as UserId, email: user.email }))))
    ?.secret

const restart = async (keys: Record<string, string>) => {
  await server?.stop()
  server = await startServer({ env: { ...env, ...keys } })
  return server
}

test("SECRET_KEY rotation: SECRET_KEY_PREVIOUS keeps sealed secrets open, `secrets reseal` moves them, the old key can go", async () => {
  let s = await restart({ SECRET_KEY: TEST_SECRET_KEY })
  // The fixtures, made by the admin services as the operator under the first SECRET_KEY; that connection is closed
  // before the server restarts with other keys.
  const setup = testDatabase(s.env)
  const { org, sensor, key, channel, user, enrolment } = await (async () => {
    try {
      const org = await createOrg(setup, `Rekey ${crypto.randomUUID().slice(0, 8)}`)
      const user = await createUser(setup, org.id, `rekey-${crypto.randomUUID().slice(0, 8)}@example.com`, "analyst")
      return {
        org,
        sensor: await createSensor(setup, org.id, "web-01"),
        key: await createKey(setup, org.id, "events:read"),
        channel: await createChannel(setup, org.id, `${receiver.url}/rekey`),
        user,
        // A two-factor secret, sealed under the first key.
        enrolment: await twoFactorSecretOf(setup, user),
      }
    } finally {
      await setup.close()
    }
  })()

  let n = 0
  /** Sends one event with the same password; returns its fingerprint and checks its delivery's signature. */
  const round = async (server: RunningServer) => {
    n++
    const sent = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: `203.0.113.${100 + n}`, attackerInput: { username: "root", password: "hunter2" } }),
    ])
    expect(sent.body.accepted).toBe(1)
    const event = await get(server.url, `/v1/events/${sent.body.results[0].id}`, key.key)
    const until = Date.now() + 15_000
    while (receiver.requests.filter((r) => r.path === "/rekey").length < n && Date.now() < until) await Bun.sleep(50)
    const request = receiver.requests.filter((r) => r.path === "/rekey")[n - 1]
    expect(verifyWebhook(request?.body ?? "", request?.headers["x-service-signature"] ?? "", channel.secret).ok).toBe(
      true,
    )
    return event.body.attackerInput.password.fingerprint as string
  }

  const fingerprint = await round(s)
  expect(fingerprint).toMatch(/^[0-9a-f]{32}$/)

  // New key, old key kept as previous: everything sealed before still opens.
  s = await restart({ SECRET_KEY: NEW_KEY, SECRET_KEY_PREVIOUS: TEST_SECRET_KEY })
  expect(await round(s)).toBe(fingerprint)

  // Resealing without the old key cannot open the secrets: it says which, and changes nothing.
  const blind = await admin({ ...s.env, SECRET_KEY_PREVIOUS: "" }, ["secrets", "reseal"])
  expect(blind.code).toBe(1)
  expect(blind.stdout).toContain(org.id)
  expect(blind.stdout).toContain(channel.id)
  expect(blind.stdout).toContain(user.id)

  const resealed = await adminJson(s.env, ["secrets", "reseal"])
  expect(resealed.fingerprintKeys).toMatchObject({ resealed: 1, unreadable: [] })
  expect(resealed.channelSecrets).toMatchObject({ resealed: 1, unreadable: [] })
  expect(resealed.twoFactorSecrets).toMatchObject({ resealed: 1, unreadable: [] })
  const again = await adminJson(s.env, ["secrets", "reseal"])
  expect(again.fingerprintKeys.resealed + again.channelSecrets.resealed + again.twoFactorSecrets.resealed).toBe(0)

  // The old key is gone: same fingerprints, same channel secret.
  s = await restart({ SECRET_KEY: NEW_KEY, SECRET_KEY_PREVIOUS: "" })
  expect(await round(s)).toBe(fingerprint)
  expect(s.logs.join("\n")).not.toContain(NEW_KEY)
  // The two-factor secret opens under the new key alone: the same secret, not a new one.
  const after = testDatabase(s.env)
  try {
    expect(await twoFactorSecretOf(after, user)).toBe(enrolment)
  } finally {
    await after.close()
  }
}, 120_000)
