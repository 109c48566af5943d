import type { PgClient } from "@effect/sql-pg"
import { Effect, Redacted, Schedule } from "effect"
import Pg from "pg"

/** A dedicated connection (LISTEN, NOTIFY) with the pool's settings. */
export const listenClientConfig = (config: PgClient.PgClientConfig, applicationName?: string): Pg.ClientConfig => ({
  ...(config.url !== undefined
    ? { connectionString: Redacted.value(config.url) }
    : {
        host: config.host ?? config.path,
        port: config.port,
        database: config.database,
        user: config.username,
        password: config.password === undefined ? undefined : Redacted.value(config.password),
      }),
  connectionTimeoutMillis: 2_000,
  keepAlive: true,
  ...(applicationName === undefined ? {} : { application_name: applicationName }),
})

/**
 * LISTEN on a channel for as long as the scope lives, surviving database restarts. @effect/sql-pg's `listen`
 * swallows its connection's errors and never listens again after a restart; this keeps a connection of its own
 * and, when it errs or ends, opens a new one (after 1 s, backing off to 5 s). `onNotify` also runs right after each
 * (re)connection, since notifications sent while disconnected are lost.
 */
export const listenForever = (
  config: PgClient.PgClientConfig,
  channel: string,
  onNotify: () => void,
): Effect.Effect<never> => {
  const clientConfig = listenClientConfig(config)

  /** One connection's life: succeeds when it is lost (or could not be made). */
  const session = Effect.async<void>((resume) => {
    const client = new Pg.Client(clientConfig)
    let over = false
    const close = () => {
      client.removeAllListeners()
      client.on("error", () => {})
      client.end().catch(() => {})
    }
    const lost = () => {
      if (over) return
      over = true
      close()
      resume(Effect.void)
    }
    client.on("notification", (message) => {
      if (message.channel === channel) onNotify()
    })
    client.on("error", lost)
    client.on("end", lost)
    client
      .connect()
      .then(() => client.query(`LISTEN ${Pg.escapeIdentifier(channel)}`))
      .then(() => onNotify(), lost)
    return Effect.sync(() => {
      over = true
      close()
    })
  })

  return session.pipe(
    Effect.zipRight(Effect.logDebug("LISTEN connection lost; reconnecting")),
    Effect.repeat(Schedule.union(Schedule.exponential("1 second", 1.5), Schedule.spaced("5 seconds"))),
    Effect.zipRight(Effect.never),
  )
}
