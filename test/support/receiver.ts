import { createServer as createTlsServer } from "node:tls"
import type { TestCertificate } from "./tls.ts"

/**
 * A real local HTTPS webhook receiver for the end-to-end delivery tests (certificates from tls.ts, made at test
 * time). Behaviour by path: `/status/<code>` answers that code, `/redirect` answers 302 to
 * `/redirect-target`, `/slow` answers after 6 s, anything else 202. A second listener (`closeUrl`) accepts TLS
 * and closes the connection without answering.
 */

export interface ReceivedRequest {
  readonly path: string
  readonly method: string
  readonly headers: Record<string, string>
  readonly body: string
  /** Arrival time (ms). */
  readonly at: number
}

export interface Receiver {
  readonly url: string
  readonly closeUrl: string
  readonly requests: Array<ReceivedRequest>
  /** Connections the closing listener accepted and closed, by request path. */
  readonly closed: (path: string) => number
  /** Overrides the answer of a path from now on. */
  readonly setStatus: (path: string, status: number) => void
  /** Holds every answer for `ms` from now on (0: answer at once). */
  readonly setDelay: (ms: number) => void
  readonly stop: () => void
}

export const startReceiver = async (certs: TestCertificate): Promise<Receiver> => {
  const requests: Array<ReceivedRequest> = []
  const overrides = new Map<string, number>()
  const closedByPath = new Map<string, number>()
  let delay = 0
  let origin = ""
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: certs.cert, key: certs.key },
    fetch: async (request): Promise<Response> => {
      const url = new URL(request.url)
      const body = await request.text()
      const headers: Record<string, string> = {}
      request.headers.forEach((value, name) => {
        headers[name] = value
      })
      requests.push({ path: url.pathname, method: request.method, headers, body, at: Date.now() })
      if (delay > 0) await Bun.sleep(delay)
      const override = overrides.get(url.pathname)
      if (override !== undefined) return new Response("ok", { status: override })
      if (url.pathname === "/slow") {
        await Bun.sleep(6_000)
        return new Response("late")
      }
      if (url.pathname === "/redirect") {
        return new Response(null, { status: 302, headers: { location: `${origin}/redirect-target` } })
      }
      const status = /^\/status\/(\d{3})$/.exec(url.pathname)?.[1]
      if (status) return new Response(`answer ${status}`, { status: Number(status) })
      return new Response(null, { status: 202 })
    },
  })
  origin = `https://127.0.0.1:${server.port}`

  // Accepts TLS, reads the request head, then closes without a response.
  const closer = createTlsServer({ cert: certs.cert, key: certs.key }, (socket) => {
    socket.once("data", (chunk) => {
      const path = /^[A-Z]+ (\S+)/.exec(chunk.toString("latin1"))?.[1] ?? "?"
      closedByPath.set(path, (closedByPath.get(path) ?? 0) + 1)
      socket.destroy()
    })
    socket.on("error", () => {})
  })
  await new Promise<void>((resolve) => closer.listen(0, "127.0.0.1", resolve))
  const address = closer.address()
  const closePort = typeof address === "object" && address !== null ? address.port : 0

  return {
    url: origin,
    closeUrl: `https://127.0.0.1:${closePort}`,
    requests,
    closed: (path) => closedByPath.get(path) ?? 0,
    setStatus: (path, status) => overrides.set(path, status),
    setDelay: (ms) => {
      delay = ms
    },
    stop: () => {
      server.stop(true)
      closer.close()
    },
  }
}
