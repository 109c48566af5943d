import { HttpServer } from "@effect/platform"
import { Effect } from "effect"
import { Lifecycle } from "../Lifecycle.ts"

/** A listener readiness waits for (Lifecycle.serving): the public API and ingest. */
type PublicListener = "api" | "ingest"

const announce = (name: string, thenEffect: Effect.Effect<void, never, Lifecycle> | undefined) =>
  Effect.gen(function* () {
    const server = yield* HttpServer.HttpServer
    if (server.address._tag !== "TcpAddress") return
    // Tests, the bench and operators read the bound port (0 in the configuration means any) from this line.
    yield* Effect.logInfo(`${name} listening`).pipe(Effect.annotateLogs({ listener: name, port: server.address.port }))
    if (thenEffect !== undefined) yield* thenEffect
  })

/**
 * Run once a listener's server is bound (`Layer.effectDiscard` under its server layer): logs "<name> listening"
 * with the listener's name and port, and for the API and ingest tells Lifecycle, so /readyz can answer ready.
 */
export function listening(name: PublicListener): Effect.Effect<void, never, HttpServer.HttpServer | Lifecycle>
export function listening(name: "ops" | "console"): Effect.Effect<void, never, HttpServer.HttpServer>
export function listening(name: PublicListener | "ops" | "console") {
  return announce(
    name,
    name === "api" || name === "ingest"
      ? Effect.flatMap(Lifecycle, (lifecycle) => lifecycle.listening(name))
      : undefined,
  )
}
