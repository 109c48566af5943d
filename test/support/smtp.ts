import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { makeTestCertificate } from "./tls.ts"

/**
 * A real SMTP submission server for the email channel tests: aiosmtpd (Debian's python3-aiosmtpd, run with the system
 * Python) from smtpServer.py, on 127.0.0.1 and a free port, with a throwaway CA and a server certificate for 127.0.0.1
 * and localhost. Mode `starttls` is plain SMTP that requires STARTTLS before AUTH and MAIL; `implicit` is TLS from the
 * first byte. Both require AUTH (PLAIN or LOGIN) with exactly the given user and password.
 *
 * Every accepted message is one record, parsed by Python's `email` package (no MIME parser of our own); every refusal
 * (a 5xx reply) is one record too.
 */

export const SYSTEM_PYTHON = "/usr/bin/python3"
const SERVER_SCRIPT = join(import.meta.dir, "smtpServer.py")

export type SmtpMode = "starttls" | "implicit"

/** One accepted message, as the server saw and parsed it. */
export interface ReceivedMail {
  readonly event: "accepted"
  readonly mailFrom: string
  readonly rcptTos: ReadonlyArray<string>
  /** The raw message as sent (CRLF line ends), decoded as UTF-8. */
  readonly data: string
  /** The session was TLS when the message was sent (STARTTLS done, or implicit TLS). */
  readonly tls: boolean
  readonly tlsVersion: string | null
  readonly authenticated: boolean
  /** The user that logged in. */
  readonly login: string | null
  /** Header values decoded (RFC 2047). */
  readonly subject: string | null
  readonly from: string | null
  readonly to: string | null
  /** The first value of each header, by lower-case name, decoded. */
  readonly headers: Readonly<Record<string, string>>
  /** The text/plain body (decoded from its transfer encoding and charset), or null. */
  readonly textPart: string | null
  /** The text/html body, or null. */
  readonly htmlPart: string | null
  /** Every part's content type, in order (the top one first): multipart/alternative, text/plain, text/html. */
  readonly contentTypes: ReadonlyArray<string>
  /** What Python's parser found wrong with the message (defect class names); empty when nothing. */
  readonly defects: ReadonlyArray<string>
  /** Set instead of the parsed fields when the message could not be parsed. */
  readonly parseError?: string
}

/** A reply of 5xx the server gave: a command before STARTTLS, a wrong password, MAIL before AUTH. */
export interface RefusedAttempt {
  readonly event: "refused"
  readonly reply: string
  readonly tls: boolean
  readonly tlsVersion: string | null
  readonly authenticated: boolean
  readonly login: string | null
  /** The user of the last AUTH attempt on that connection, if any. */
  readonly attemptedLogin: string | null
}

export interface SmtpServer {
  readonly mode: SmtpMode
  readonly host: "127.0.0.1"
  readonly port: number
  /** PEM file of the CA that signed the server's certificate (for 127.0.0.1 and localhost): trust it. */
  readonly caFile: string
  /** The CA certificate itself (PEM). */
  readonly ca: string
  /** `smtps://user:pass@127.0.0.1:port` (implicit) or `smtp://…` (starttls), user and password percent-encoded. */
  readonly url: string
  /** Every message accepted so far, in arrival order. */
  readonly messages: () => Promise<ReadonlyArray<ReceivedMail>>
  /** Every refusal so far. */
  readonly refused: () => Promise<ReadonlyArray<RefusedAttempt>>
  /** Waits until at least `count` messages are accepted (or `timeoutMs` passed) and returns them. */
  readonly waitFor: (count: number, timeoutMs?: number) => Promise<ReadonlyArray<ReceivedMail>>
  /** The server's diagnostics (stderr). */
  readonly log: () => string
  readonly stop: () => Promise<void>
}

export interface SmtpServerOptions {
  readonly mode: SmtpMode
  readonly user: string
  readonly password: string
}

type Line = ReceivedMail | RefusedAttempt

const readLines = (file: string): ReadonlyArray<Line> => {
  if (!existsSync(file)) return []
  // Only complete lines: the last piece (after the final newline) may be a line still being written.
  return readFileSync(file, "utf8")
    .split("\n")
    .slice(0, -1)
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Line)
}

/** Starts the server; `stop` ends it and removes its folder. */
export const startSmtpServer = async (options: SmtpServerOptions): Promise<SmtpServer> => {
  if (!existsSync(SYSTEM_PYTHON)) throw new Error(`${SYSTEM_PYTHON} is missing: apt-get install -y python3-aiosmtpd`)
  const dir = mkdtempSync(join(tmpdir(), "test-smtp-"))
  const certificate = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
  const caFile = join(dir, "ca.pem")
  writeFileSync(caFile, certificate.caCert)
  writeFileSync(join(dir, "server.pem"), certificate.cert)
  writeFileSync(join(dir, "server.key"), certificate.key, { mode: 0o600 })
  const out = join(dir, "out.jsonl")
  const child = Bun.spawn(
    [
      SYSTEM_PYTHON,
      SERVER_SCRIPT,
      "--mode",
      options.mode,
      "--cert",
      join(dir, "server.pem"),
      "--key",
      join(dir, "server.key"),
      "--out",
      out,
    ],
    {
      // The system Python and its packages, whatever python the PATH names first.
      env: {
        PATH: "/usr/bin:/bin",
        PYTHONDONTWRITEBYTECODE: "1",
        SMTP_TEST_USER: options.user,
        SMTP_TEST_PASSWORD: options.password,
      },
      stdout: "pipe",
      stderr: "pipe",
    },
  )
  let diagnostics = ""
  void (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of child.stderr) diagnostics += decoder.decode(chunk, { stream: true })
  })()

  // The first stdout line is "PORT <n>".
  const port = await new Promise<number>((resolve) => {
    const decoder = new TextDecoder()
    let text = ""
    const timer = setTimeout(() => resolve(0), 15_000)
    void (async () => {
      for await (const chunk of child.stdout) {
        text += decoder.decode(chunk, { stream: true })
        const match = /^PORT (\d+)\n/.exec(text)
        if (match !== null) {
          clearTimeout(timer)
          resolve(Number(match[1]))
          return
        }
      }
      clearTimeout(timer)
      resolve(0)
    })()
  })
  if (port === 0) {
    child.kill()
    await child.exited
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`the SMTP test server did not start: ${diagnostics}`)
  }

  const accepted = () => readLines(out).filter((line): line is ReceivedMail => line.event === "accepted")
  const scheme = options.mode === "implicit" ? "smtps" : "smtp"
  return {
    mode: options.mode,
    host: "127.0.0.1",
    port,
    caFile,
    ca: certificate.caCert,
    url: `${scheme}://${encodeURIComponent(options.user)}:${encodeURIComponent(options.password)}@127.0.0.1:${port}`,
    messages: async () => accepted(),
    refused: async () => readLines(out).filter((line): line is RefusedAttempt => line.event === "refused"),
    waitFor: async (count, timeoutMs = 10_000) => {
      const until = performance.now() + timeoutMs
      while (performance.now() < until) {
        const lines = accepted()
        if (lines.length >= count) return lines
        await Bun.sleep(25)
      }
      return accepted()
    },
    log: () => diagnostics,
    stop: async () => {
      child.kill("SIGTERM")
      const ended = await Promise.race([child.exited.then(() => true), Bun.sleep(5000).then(() => false)])
      if (!ended) {
        child.kill("SIGKILL")
        await child.exited
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
