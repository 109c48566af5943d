import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import tls from "node:tls"

/**
 * Test-only TLS fixtures: a throwaway CA and server certificates made at test time with the `openssl` CLI (nothing
 * checked in), a local HTTPS receiver (`Bun.serve`) that records what it was sent and answers as each test says, and a
 * raw TLS receiver (`node:tls`) that records the SNI name and the bytes it got, then answers verbatim or hangs up.
 */

const OPENSSL = "/usr/bin/openssl"

export interface TestCa {
  readonly caCert: string
  readonly caKey: string
}

export interface TestCertificate {
  /** The CA that signed `cert` (PEM); trust it through `ca`. */
  readonly caCert: string
  readonly cert: string
  readonly key: string
}

export interface CertificateNames {
  readonly dnsNames?: ReadonlyArray<string>
  readonly ipAddresses?: ReadonlyArray<string>
}

const openssl = (cwd: string, args: ReadonlyArray<string>): void => {
  const result = Bun.spawnSync([OPENSSL, ...args], { cwd, stdout: "pipe", stderr: "pipe" })
  if (result.exitCode !== 0) {
    throw new Error(`openssl ${args.join(" ")} failed (${result.exitCode}): ${result.stderr.toString()}`)
  }
}

const withTempDir = <A>(use: (dir: string) => A): A => {
  const dir = mkdtempSync(join(tmpdir(), "test-tls-"))
  try {
    return use(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

/** A DNS stand-in that answers `addresses` and records which host names were looked up. */
export const lookupTo = (...addresses: ReadonlyArray<string>) => {
  const hosts: Array<string> = []
  const lookup = async (host: string): Promise<ReadonlyArray<string>> => {
    hosts.push(host)
    return addresses
  }
  return { lookup, hosts }
}

/** A fresh self-signed CA (P-256), valid for two days. */
export const makeTestCa = (commonName = "Throwaway Webhook Test CA"): TestCa =>
  withTempDir((dir) => {
    openssl(dir, [
      "req",
      "-x509",
      ...EC_KEY,
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
      "-days",
      "2",
      "-subj",
      `/CN=${commonName}`,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ])
    return { caCert: readFileSync(join(dir, "ca.pem"), "utf8"), caKey: readFileSync(join(dir, "ca.key"), "utf8") }
  })

/** A server certificate signed by `ca` whose subjectAltName lists exactly the given DNS names and IP addresses. */
export const issueCertificate = (ca: TestCa, names: CertificateNames): TestCertificate =>
  withTempDir((dir) => {
    const dnsNames = names.dnsNames ?? []
    const ipAddresses = names.ipAddresses ?? []
    const san = [...dnsNames.map((name) => `DNS:${name}`), ...ipAddresses.map((ip) => `IP:${ip}`)]
    if (san.length === 0) throw new Error("issueCertificate: give at least one DNS name or IP address")
    writeFileSync(join(dir, "ca.pem"), ca.caCert)
    writeFileSync(join(dir, "ca.key"), ca.caKey)
    writeFileSync(
      join(dir, "leaf.ext"),
      [
        `subjectAltName=${san.join(",")}`,
        "basicConstraints=critical,CA:FALSE",
        "keyUsage=critical,digitalSignature",
        "extendedKeyUsage=serverAuth",
        "",
      ].join("\n"),
    )
    openssl(dir, [
      "req",
      "-new",
      ...EC_KEY,
      "-keyout",
      "leaf.key",
      "-out",
      "leaf.csr",
      "-subj",
      "/CN=webhook test leaf",
    ])
    const serial = `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex")}`
    openssl(dir, [
      "x509",
      "-req",
      "-in",
      "leaf.csr",
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-set_serial",
      serial,
      "-days",
      "2",
      "-extfile",
      "leaf.ext",
      "-out",
      "leaf.pem",
    ])
    return {
      caCert: ca.caCert,
      cert: readFileSync(join(dir, "leaf.pem"), "utf8"),
      key: readFileSync(join(dir, "leaf.key"), "utf8"),
    }
  })

/** A new CA and one server certificate for the given names, signed by it. */
export const makeTestCertificate = (names: CertificateNames): TestCertificate => issueCertificate(makeTestCa(), names)

// ---------------------------------------------------------------------------------------------------------------------
// HTTPS receiver (Bun.serve)
// ---------------------------------------------------------------------------------------------------------------------

export interface RecordedRequest {
  readonly method: string
  /** Path and query, e.g. `/hook?x=1`. */
  readonly path: string
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  readonly bodyBytes: Uint8Array
  /** Set when the client went away before the receiver had answered (e.g. a time-out destroyed the socket). */
  aborted: boolean
}

export interface ReceiverBehaviour {
  /** Default 200. */
  readonly status?: number
  /** Sleep this long (after reading the request) before answering. */
  readonly delayMs?: number
  /** Answer 302 (or `status` when it is a 3xx) with this Location. */
  readonly redirectTo?: string
  /** Answer with this many bytes of "a" (streamed in 64 KiB chunks) instead of `body`. */
  readonly bodyBytes?: number
  /** Default "ok". */
  readonly body?: string
  readonly headers?: Readonly<Record<string, string>>
}

export interface Receiver {
  readonly port: number
  readonly hostname: string
  readonly requests: ReadonlyArray<RecordedRequest>
  /** How the following requests are answered (replaces the previous behaviour). */
  readonly respond: (behaviour: ReceiverBehaviour) => void
  /** Forgets recorded requests and restores the default behaviour (200 "ok"). */
  readonly reset: () => void
  /** Resolves when a request has been recorded as aborted, or after `withinMs`. */
  readonly waitForAbort: (withinMs: number) => Promise<boolean>
  readonly stop: () => Promise<void>
}

const CHUNK = 64 * 1024

const bigBody = (size: number): ReadableStream<Uint8Array> => {
  let sent = 0
  const chunk = new Uint8Array(CHUNK).fill(0x61)
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= size) {
        controller.close()
        return
      }
      const next = chunk.subarray(0, Math.min(CHUNK, size - sent))
      sent += next.length
      controller.enqueue(next)
    },
  })
}

/** A local HTTPS receiver on `hostname` (127.0.0.1 or ::1) and a free port, recording every request. */
export const startReceiver = (certificate: { readonly cert: string; readonly key: string }, hostname = "127.0.0.1") => {
  const requests: Array<RecordedRequest> = []
  let behaviour: ReceiverBehaviour = {}
  const server = Bun.serve({
    port: 0,
    hostname,
    tls: { cert: certificate.cert, key: certificate.key },
    idleTimeout: 30,
    async fetch(req) {
      const url = new URL(req.url)
      const bodyBytes = new Uint8Array(await req.arrayBuffer())
      const recorded: RecordedRequest = {
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers: Object.fromEntries(req.headers),
        body: new TextDecoder().decode(bodyBytes),
        bodyBytes,
        aborted: false,
      }
      requests.push(recorded)
      req.signal.addEventListener("abort", () => {
        recorded.aborted = true
      })
      const current = behaviour
      if (current.delayMs !== undefined) await Bun.sleep(current.delayMs)
      const headers = new Headers(current.headers)
      if (current.redirectTo !== undefined) {
        headers.set("Location", current.redirectTo)
        return new Response("moved", { status: current.status ?? 302, headers })
      }
      const status = current.status ?? 200
      if (current.bodyBytes !== undefined) return new Response(bigBody(current.bodyBytes), { status, headers })
      return new Response(current.body ?? "ok", { status, headers })
    },
  })
  const receiver: Receiver = {
    port: server.port ?? 0,
    hostname,
    requests,
    respond: (next) => {
      behaviour = next
    },
    reset: () => {
      requests.length = 0
      behaviour = {}
    },
    waitForAbort: async (withinMs) => {
      const until = performance.now() + withinMs
      while (performance.now() < until) {
        if (requests.some((request) => request.aborted)) return true
        await Bun.sleep(10)
      }
      return requests.some((request) => request.aborted)
    },
    stop: () => server.stop(true),
  }
  return receiver
}

// ---------------------------------------------------------------------------------------------------------------------
// Raw TLS receiver (node:tls): SNI and bytes, then a verbatim answer or a hang-up
// ---------------------------------------------------------------------------------------------------------------------

export interface RawReceiver {
  readonly port: number
  /** The SNI name of each TLS connection ("" when the client sent none). */
  readonly serverNames: ReadonlyArray<string>
  /** Everything received on each connection, as text. */
  readonly received: ReadonlyArray<string>
  /** `null`: close the connection without answering; otherwise write these bytes, then close. */
  readonly answer: (bytes: string | null) => void
  readonly reset: () => void
  readonly stop: () => Promise<void>
}

/**
 * A TLS server that waits for the first bytes of a request, then either hangs up without answering or writes the
 * given bytes verbatim and closes (a complete or a deliberately truncated HTTP response).
 */
export const startRawReceiver = async (
  certificate: { readonly cert: string; readonly key: string },
  hostname = "127.0.0.1",
): Promise<RawReceiver> => {
  const serverNames: Array<string> = []
  const received: Array<string> = []
  let reply: string | null = null
  const server = tls.createServer({ cert: certificate.cert, key: certificate.key }, (socket) => {
    // Bun and Node give `false` (not a string) when the client sent no SNI.
    const name: unknown = socket.servername
    serverNames.push(typeof name === "string" ? name : "")
    const index = received.push("") - 1
    socket.on("error", () => {})
    socket.once("data", (data: Buffer) => {
      received[index] = data.toString("utf8")
      // The rest of a request (if split) is recorded too, but the answer does not wait for it.
      socket.on("data", (more: Buffer) => {
        received[index] = `${received[index] ?? ""}${more.toString("utf8")}`
      })
      if (reply === null) socket.destroy()
      else socket.end(reply)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, hostname, () => resolve()))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    port,
    serverNames,
    received,
    answer: (bytes) => {
      reply = bytes
    },
    reset: () => {
      serverNames.length = 0
      received.length = 0
      reply = null
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
