/**
 * The framework's own floor: the same `@effect/platform` HttpApi + BunHttpServer stack as the service (HttpApiBuilder,
 * tracer disabled per request as src/api/server.ts does, the answer built with `HttpServerResponse.unsafeJson` as
 * src/api/handlers.ts does), one endpoint, no database, no authentication, no rate limit, no logging. It answers a
 * constant page (the body of a real list page, read at start-up) and serializes it on every request as the service
 * does, so the difference to the baseline's req/s on the same page is what the framework costs by itself.
 *
 * Started by bench/run.ts (`api` part):
 *   FLOOR_BODY_FILE=<a list page's JSON> PORT=0 bun bench/httpapi-floor.ts
 */
import { readFileSync } from "node:fs"
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpMiddleware,
  HttpServer,
  HttpServerResponse,
} from "@effect/platform"
import { BunHttpServer, BunRuntime } from "@effect/platform-bun"
import { Effect, Layer, Schema } from "effect"

const bodyFile = process.env.FLOOR_BODY_FILE
const body: unknown = bodyFile ? JSON.parse(readFileSync(bodyFile, "utf8")) : { data: [], nextCursor: null }

class FloorGroup extends HttpApiGroup.make("floor").add(
  HttpApiEndpoint.get("page", "/v1/floor").addSuccess(Schema.Unknown),
) {}
class FloorApi extends HttpApi.make("floor").add(FloorGroup) {}

const FloorHandlers = HttpApiBuilder.group(FloorApi, "floor", (handlers) =>
  handlers.handle("page", () => Effect.succeed(HttpServerResponse.unsafeJson(body))),
)

const logAddress = Effect.gen(function* () {
  const server = yield* HttpServer.HttpServer
  if (server.address._tag === "TcpAddress") {
    // The line bench/lib/proc.ts waits for.
    console.log(JSON.stringify({ message: "floor listening", annotations: { port: server.address.port } }))
  }
})

const FloorLive = HttpApiBuilder.serve().pipe(
  HttpMiddleware.withTracerDisabledWhen(() => true),
  Layer.provide(HttpApiBuilder.api(FloorApi).pipe(Layer.provide(FloorHandlers))),
  Layer.provide(Layer.effectDiscard(logAddress)),
  Layer.provide(
    BunHttpServer.layer({ port: Number(process.env.PORT ?? 0), hostname: process.env.HOST ?? "127.0.0.1" }),
  ),
)

BunRuntime.runMain(Layer.launch(FloorLive))
