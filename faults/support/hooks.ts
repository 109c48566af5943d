import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { makeTestCertificate, type TestCertificate } from "../../test/support/tls.ts"

/**
 * A local HTTPS webhook receiver for the fault tests: it can listen on a given port (so a test can stop it and
 * bring a new one up on the same address), answer slowly or with a chosen status, and it records when each
 * request arrived and when it was answered, so a test can tell how many sends are in flight.
 */

export interface Hook {
  readonly id: string
  readonly attempt: string
  readonly signature: string
  readonly path: string
  readonly body: string
  /** Arrival (ms). */
  readonly at: number
  /** When the answer left (ms); undefined while the request is held. */
  answeredAt: number | undefined
  status: number | undefined
}

export interface HookReceiver {
  readonly port: number
  readonly url: string
  readonly hooks: Array<Hook>
  /** Requests received and not answered yet. */
  readonly inflight: () => number
  readonly setDelay: (ms: number) => void
  /** The status of every answer from now on (default 202). */
  readonly setStatus: (status: number) => void
  /** Closes the listener and every open connection. */
  readonly stop: () => Promise<void>
}

export interface WebhookTls {
  readonly certs: TestCertificate
  /** PEM file of the CA (WEBHOOK_CA_FILE). */
  readonly caFile: string
  readonly remove: () => void
}

/** A throwaway CA and a certificate for 127.0.0.1, the CA written to a file for WEBHOOK_CA_FILE. */
export const webhookTls = (): WebhookTls => {
  const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
  const dir = mkdtempSync(join(tmpdir(), "faults-ca-"))
  const caFile = join(dir, "ca.pem")
  writeFileSync(caFile, certs.caCert)
  return { certs, caFile, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** The webhook settings every fault test server uses (loopback allowed through the test-only setting). */
export const webhookEnv = (caFile: string, extra: Record<string, string> = {}): Record<string, string> => ({
  WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
  WEBHOOK_CA_FILE: caFile,
  WEBHOOK_POLL_INTERVAL: "200 millis",
  ...extra,
})

export const startHookReceiver = (
  certs: TestCertificate,
  options: { port?: number; hooks?: Array<Hook>; delayMs?: number; status?: number } = {},
): HookReceiver => {
  const hooks = options.hooks ?? []
  let delay = options.delayMs ?? 0
  let status = options.status ?? 202
  const server = Bun.serve({
    port: options.port ?? 0,
    hostname: "127.0.0.1",
    tls: { cert: certs.cert, key: certs.key },
    idleTimeout: 30,
    fetch: async (request) => {
      const body = await request.text()
      const hook: Hook = {
        id: request.headers.get("x-service-webhook-id") ?? "",
        attempt: request.headers.get("x-service-delivery-attempt") ?? "",
        signature: request.headers.get("x-service-signature") ?? "",
        path: new URL(request.url).pathname,
        body,
        at: Date.now(),
        answeredAt: undefined,
        status: undefined,
      }
      hooks.push(hook)
      if (delay > 0) await Bun.sleep(delay)
      hook.answeredAt = Date.now()
      hook.status = status
      return new Response(status === 202 ? null : "unavailable", { status })
    },
  })
  const port = server.port ?? 0
  return {
    port,
    url: `https://127.0.0.1:${port}`,
    hooks,
    inflight: () => hooks.filter((h) => h.answeredAt === undefined).length,
    setDelay: (ms) => {
      delay = ms
    },
    setStatus: (next) => {
      status = next
    },
    stop: async () => {
      await server.stop(true)
    },
  }
}
