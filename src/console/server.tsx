import { HttpServer, HttpServerResponse } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { Effect, Layer, Option } from "effect"
import { AdminServicesLive } from "../admin/layer.ts"
import { AppConfig } from "../platform/config.ts"
import { draining } from "../platform/http/drain.ts"
import { listening } from "../platform/http/listening.ts"
import { ChannelSender } from "../platform/outbound/ChannelSender.ts"
import { ReposLive } from "../repos/layers.ts"
import { makeConsoleApp } from "./app.ts"
import { ConsoleReads } from "./ConsoleReads.ts"
import { SECURITY_HEADERS, SERVER_MAX_BODY_BYTES } from "./http.ts"

/*
 * The console's wiring. Where the rest lives:
 * - app.ts: the request handler (every area's routes, assets, edge checks, error pages);
 * - one folder per area, each with its routes module (routes.tsx, handlers as named functions) and its pages:
 *   overview, incidents, events, sources, ignore, alerts, sensors, settings, auth;
 * - shared at the top: session.ts (sessions, the page guard), csrf.ts (the action guard), flash.ts (notices and
 *   refusals), forms.ts (forms decoded with a Schema), kit.ts, layout.tsx and components.tsx (what pages are built
 *   from), eventTable.tsx, responses.tsx (the fixed answers: 404, 403, …), listFilters.ts, csv.ts, http.ts.
 */

/** The security headers on every response, static files and errors included. */
const securityHeaders = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.map(app, (response) => HttpServerResponse.setHeaders(response, SECURITY_HEADERS))

/** The console listener on CONSOLE_PORT: never the API's port; it accepts no API key. */
const ConsoleListenerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    draining((track) =>
      Layer.unwrapEffect(Effect.map(makeConsoleApp, (router) => HttpServer.serve(track(securityHeaders(router))))).pipe(
        Layer.provide(Layer.effectDiscard(listening("console"))),
        Layer.provide(
          BunHttpServer.layer({
            port: config.consolePort,
            hostname: config.host,
            // Bun's own cut-off, far below its 128 MiB default; the console's limit (64 KiB) is checked before it.
            maxRequestBodySize: SERVER_MAX_BODY_BYTES,
            // HTTPS itself with CONSOLE_TLS_CERT_FILE and CONSOLE_TLS_KEY_FILE, or plain HTTP behind a proxy.
            ...Option.match(config.consoleTls, { onNone: () => ({}), onSome: (tls) => ({ tls }) }),
          }),
        ),
      ),
    ),
  ),
)

/**
 * The console face: its listener, with the console's own read statements. It needs the admin services
 * (admin/layer.ts), the shared repositories and a database pool, all given by main.ts.
 */
export const ConsoleLive = ConsoleListenerLive.pipe(
  Layer.provide(ConsoleReads.Default),
  Layer.provide(AdminServicesLive),
  Layer.provide(Layer.mergeAll(ReposLive, ChannelSender.Default)),
)
