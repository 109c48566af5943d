import * as http from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Layer } from "effect"

/**
 * The API listener's server: Bun's `node:http` through @effect/platform-node, not `Bun.serve`.
 *
 * Bun 1.4.4's `Bun.serve` writes a response finished after an `await` without corking the socket: a list response
 * left in about 40 `send()` calls (each header fragment its own), about 170 µs of kernel CPU per request. Bun's
 * `node:http` writes the whole response (status line, headers, body) in one `sendmsg`, as Node's server does. Served
 * through it, GET /v1/incidents at 16 connections went from 892 to 1,015 req/s and from 1,147 to 1,037 µs of the
 * service's CPU per request (medians of 3 rounds; /v1/events and 64 connections alike: +7 to +14 % req/s, about
 * 100 µs less CPU per request; bench/results/2026-11-29T1220Z-ab-node-server.txt). The runtime stays Bun, and the
 * server is still an @effect/platform one.
 *
 * What `Bun.serve` did by itself and `node:http` is told to do here:
 * - the framing: each answer carries Content-Length (HEAD ones too), not chunked encoding (`ApiResponse`);
 * - the idle limit between requests: a keep-alive connection silent for IDLE_TIMEOUT_MS is closed (Bun.serve's
 *   default `idleTimeout`; node:http's own is 5 s);
 * - the rest of a body a handler stopped reading (POST /mcp past its bound) never stalls the sender: the answer
 *   ends the connection (`ApiResponse.writeHead`).
 * What it does alike by itself: a connection stalled inside a request is closed after about 10 s; a request body
 * never read (a 405 to a POST) is read and dropped as it comes, never held; a request line or headers over 16 KiB
 * get 431; closing the server closes its idle keep-alive connections.
 * What differs on the wire: header names go out as the service spells them (lower case), and each answer says
 * `Connection: keep-alive` and `Keep-Alive: timeout=10` (or `Connection: close`), which Bun.serve left out.
 */

/** Bun.serve's default `idleTimeout` (10 s), which the API listener had. */
export const IDLE_TIMEOUT_MS = 10_000

/**
 * The API listener's answer. @effect/platform-node answers with `writeHead(status, headers)`, then `end(body)` (or
 * `write` for a stream). Here `writeHead` only records the status and headers, so node:http sends the head with the
 * body and frames it as Bun.serve did: Content-Length from the body given to `end` (0 for an empty answer, none for
 * 204 and 304), chunked only for a stream. Sent at once by `writeHead`, an answer without its own Content-Length
 * header (an empty one: the 308 from /docs/, the MCP door's 202) would go out chunked. A body of bytes carries the
 * header already (HttpServerResponse sets it), so an answer to HEAD says the length of the GET.
 */
class ApiResponse<Request extends http.IncomingMessage = http.IncomingMessage> extends http.ServerResponse<Request> {
  override writeHead(
    statusCode: number,
    reasonOrHeaders?: string | http.OutgoingHttpHeaders | http.OutgoingHttpHeader[],
    headers?: http.OutgoingHttpHeaders | http.OutgoingHttpHeader[],
  ): this {
    // A handler that began reading a body and stopped before its end (POST /mcp past its bound, or refusing a
    // declared length before reading any) leaves the rest unread, and node:http then neither reads it nor closes:
    // the sender would stall until the idle limit. Such an answer ends the connection. A body nobody began reading
    // (a 405 to a POST) is read and dropped by node:http itself.
    const request = this.req
    if (!request.complete && (request.readableFlowing !== null || request.readableDidRead)) {
      this.setHeader("connection", "close")
    }
    if (typeof reasonOrHeaders === "string" || Array.isArray(reasonOrHeaders) || headers !== undefined) {
      return super.writeHead(statusCode, reasonOrHeaders as string, headers)
    }
    this.statusCode = statusCode
    for (const name in reasonOrHeaders) {
      const value = reasonOrHeaders[name]
      if (value !== undefined) this.setHeader(name, value)
    }
    return this
  }

  /**
   * Bun's node:http never calls `end`'s callback when the client leaves while the answer is written (wrk stopping
   * mid-request), which Node's does (on close). @effect/platform-node waits for that callback inside the request, so
   * the request never ended, the drain (platform/http/drain.ts) waited for it forever and the process did not exit
   * on SIGTERM after a load (3 runs in 5). The callback is called at the answer's close too, or at once if it is
   * closed already, whichever comes first.
   */
  override end(...args: Array<unknown>): this {
    const at = args.findIndex((arg) => typeof arg === "function")
    if (at < 0) return (super.end as (...rest: Array<unknown>) => this).apply(this, args)
    const callback = args[at] as () => void
    let called = false
    const once = () => {
      if (called) return
      called = true
      callback()
    }
    args[at] = once
    if (this.destroyed) queueMicrotask(once)
    else this.once("close", once)
    return (super.end as (...rest: Array<unknown>) => this).apply(this, args)
  }
}

/** The node:http server the API listener runs on (see the module's comment). */
export const makeNodeServer = (): http.Server => {
  const server = http.createServer({ ServerResponse: ApiResponse })
  // Between requests; a connection stalled inside a request (its headers sent a byte at a time) is closed by Bun's
  // node:http itself after about as long.
  server.keepAliveTimeout = IDLE_TIMEOUT_MS
  return server
}

/**
 * The HttpServer (and platform) layer of a listener on `host`:`port` (0: any free port, said by `listening`). A port
 * it cannot listen on is a defect carrying the runtime's own error, as Bun.serve's was: main.ts turns a port in use
 * into its one line (platform/portInUse.ts).
 */
export const nodeServerLayer = (options: { readonly port: number; readonly host: string }) =>
  NodeHttpServer.layer(makeNodeServer, { port: options.port, host: options.host }).pipe(
    Layer.catchAll((error) => Layer.die(error.cause)),
  )
