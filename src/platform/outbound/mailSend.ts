import { isIP } from "node:net"
import { rootCertificates } from "node:tls"
import nodemailer from "nodemailer"
import { clip, errorCode, errorMessage, TIMED_OUT, withDeadline } from "./connection.ts"
import { noAnswer, type SendResult } from "./send.ts"

/**
 * Email goes out through one SMTP submission server the operator configures (SMTP_URL), never to a server an
 * organization names: the operator's relay is trusted, so it is not held to the public-address rule channel URLs pass.
 * SMTP and MIME are nodemailer's (a maintained library that has done STARTTLS, AUTH and multipart/alternative for a
 * decade); this module only says how it is used:
 * - TLS always: `smtps://` is TLS from the first byte (port 465 by default), `smtp://` must upgrade with STARTTLS before
 *   anything is sent (port 587 by default; `requireTLS`, so a server that does not offer it gets nothing, not even the
 *   credentials). The certificate is checked against the system roots plus SMTP_CA_FILE, and TLS 1.2 at least.
 * - One connection per message (no pool): alerts are rare and the settle window batches them; a pool's idle sockets and
 *   reconnects are state for no gain.
 * - The whole send is bounded by the delivery time-out; a message whose recipients were all refused failed, one where
 *   some were accepted is sent (the refused are named in the log).
 */

export interface SmtpServer {
  /** True for implicit TLS (smtps://), false for STARTTLS required (smtp://). */
  readonly implicitTls: boolean
  readonly host: string
  readonly port: number
  readonly user: string | undefined
  readonly password: string | undefined
}

export const SMTP_URL_FORMS =
  "smtps://user:password@host[:465] (TLS from the start) or smtp://user:password@host[:587] (STARTTLS, required)"

/** SMTP_URL read; the refusal never contains the value (it holds a password). */
export const parseSmtpUrl = (
  raw: string,
): { readonly ok: true; readonly server: SmtpServer } | { ok: false; reason: string } => {
  const refuse = (why: string) => ({
    ok: false as const,
    reason: `must be ${SMTP_URL_FORMS}; ${why} (the value is not shown)`,
  })
  let url: URL
  try {
    url = new URL(raw.trim())
  } catch {
    return refuse("it is not a URL")
  }
  if (url.protocol !== "smtps:" && url.protocol !== "smtp:") {
    return refuse(`mail is only sent over TLS, and ${JSON.stringify(url.protocol.slice(0, 20))} is not one of these`)
  }
  if (url.hostname === "") return refuse("it names no host")
  if ((url.pathname !== "" && url.pathname !== "/") || url.search !== "" || url.hash !== "") {
    return refuse("it has a path, options or a fragment: TLS cannot be turned off, and there is nothing else to set")
  }
  const implicitTls = url.protocol === "smtps:"
  const decode = (part: string) => {
    try {
      return decodeURIComponent(part)
    } catch {
      return undefined
    }
  }
  const user = url.username === "" ? undefined : decode(url.username)
  const password = url.password === "" ? undefined : decode(url.password)
  if ((url.username !== "" && user === undefined) || (url.password !== "" && password === undefined)) {
    return refuse("its user or password is not valid percent-encoding")
  }
  if (password !== undefined && user === undefined) return refuse("it has a password without a user")
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
  return {
    ok: true,
    server: { implicitTls, host, port: url.port === "" ? (implicitTls ? 465 : 587) : Number(url.port), user, password },
  }
}

/** An address as mail headers and RCPT TO take it: local@domain, no spaces, quotes, angle brackets or controls. */
const ADDRESS =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/

export const MAX_ADDRESS_LENGTH = 254

/**
 * `text` as a mail address the service accepts, or undefined: trimmed and lower-cased, as console users' emails are (a
 * case-sensitive local part is allowed by RFC 5321 and used by nobody), so one person is one recipient.
 */
export const normalizeAddress = (text: string): string | undefined => {
  const trimmed = text.trim()
  if (trimmed.length > MAX_ADDRESS_LENGTH || !ADDRESS.test(trimmed)) return undefined
  return trimmed.toLowerCase()
}

export interface MailFrom {
  readonly address: string
  /** The display name, or undefined. */
  readonly name: string | undefined
}

/** SMTP_FROM: `alerts@example.com` or `Decoy alerts <alerts@example.com>`. */
export const parseMailFrom = (
  raw: string,
): { readonly ok: true; readonly from: MailFrom } | { ok: false; reason: string } => {
  const text = raw.trim()
  const refuse = {
    ok: false as const,
    reason: "must be an address such as alerts@example.com or Decoy alerts <alerts@example.com>",
  }
  if (text.length > 320 || /[\p{Cc}]/u.test(text)) return refuse
  const named = /^([^<>"]{1,64}?)\s*<([^<>]+)>$/.exec(text)
  const address = normalizeAddress(named === null ? text : (named[2] ?? ""))
  if (address === undefined) return refuse
  const name = named === null ? undefined : named[1]?.trim()
  return { ok: true, from: { address, name: name === "" ? undefined : name } }
}

export interface OutgoingMail {
  readonly to: ReadonlyArray<string>
  readonly subject: string
  readonly text: string
  readonly html: string
}

export interface MailTransportSettings {
  readonly server: SmtpServer
  readonly from: MailFrom
  /** Extra CA certificates (SMTP_CA_FILE) beside the system roots. */
  readonly ca: ReadonlyArray<string>
  readonly timeoutMs: number
}

/**
 * One message to `mail.to` (all in one SMTP transaction, each a visible To: they are one channel's confirmed people).
 * `ok` when the server accepted it for at least one recipient; `responseBody` is the server's last reply (e.g.
 * "250 2.0.0 Ok: queued as …") and the refused recipients, never the message.
 */
export const sendMail = async (settings: MailTransportSettings, mail: OutgoingMail): Promise<SendResult> => {
  const started = performance.now()
  const elapsed = () => performance.now() - started
  const { server } = settings
  const transport = nodemailer.createTransport({
    host: server.host,
    port: server.port,
    secure: server.implicitTls,
    requireTLS: !server.implicitTls,
    ignoreTLS: false,
    ...(server.user === undefined ? {} : { auth: { user: server.user, pass: server.password ?? "" } }),
    tls: {
      rejectUnauthorized: true,
      minVersion: "TLSv1.2",
      ...(settings.ca.length > 0 ? { ca: [...rootCertificates, ...settings.ca] } : {}),
      // SNI and the certificate's name: the host (nodemailer gives no SNI for an IP address, checked against the IP).
      ...(isIP(server.host) === 0 ? { servername: server.host } : {}),
    },
    connectionTimeout: settings.timeoutMs,
    greetingTimeout: settings.timeoutMs,
    socketTimeout: settings.timeoutMs,
    disableFileAccess: true,
    disableUrlAccess: true,
  })
  try {
    const sent = await withDeadline(
      transport.sendMail({
        from:
          settings.from.name === undefined
            ? settings.from.address
            : { name: settings.from.name, address: settings.from.address },
        to: [...mail.to],
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        // Marks an automatic message (RFC 3834), so auto-responders do not answer it and Exchange does not either.
        headers: { "Auto-Submitted": "auto-generated", "X-Auto-Response-Suppress": "All" },
        disableFileAccess: true,
        disableUrlAccess: true,
      }),
      settings.timeoutMs,
    )
    if (sent === TIMED_OUT)
      return noAnswer(elapsed(), `no answer from the mail server within ${settings.timeoutMs} ms`, null)
    const accepted = sent.accepted.map(String)
    const rejected = sent.rejected.map(String)
    const reply = clip(String(sent.response ?? ""), 300)
    const refusedNote = rejected.length > 0 ? `; refused: ${clip(rejected.join(", "), 300)}` : ""
    const result = noAnswer(
      elapsed(),
      accepted.length === 0 ? `the mail server accepted no recipient${refusedNote}` : null,
      null,
    )
    return { ...result, responseBody: `${reply}${refusedNote}` }
  } catch (error) {
    return noAnswer(elapsed(), mailError(error), null)
  } finally {
    transport.close()
  }
}

/** A short reason: nodemailer's code and the server's reply, never the credentials or the message. */
const mailError = (error: unknown): string => {
  const code = errorCode(error)
  const command = typeof error === "object" && error !== null && "command" in error ? String(error.command) : ""
  const response = typeof error === "object" && error !== null && "response" in error ? String(error.response) : ""
  const base = response !== "" ? clip(response, 200) : errorMessage(error)
  return clip(`${code === "" ? "" : `${code}: `}${command === "" ? "" : `${command}: `}${base}`, 300)
}
