import type { PgClient } from "@effect/sql-pg"
import { Deferred, type Duration, Effect, Redacted, Schedule, type Scope } from "effect"
import Pg from "pg"

/**
 * Every LISTEN connection of the service goes through this module: @effect/sql-pg's `listen` swallows its
 * connection's errors and never listens again after a restart, so each listener keeps a `pg` connection of its own.
 * `listen` opens one for a scope; `listenForever` keeps one open for as long as its scope lives, opening a new one
 * whenever it is lost.
 */

/** A dedicated connection (LISTEN, NOTIFY) with the pool's settings. */
const clientConfig = (config: PgClient.PgClientConfig, applicationName?: string): Pg.ClientConfig => ({
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

export interface ListenOptions {
  readonly channels: ReadonlyArray<string>
  /** The connection's application_name (pg_stat_activity), when others need to count these connections. */
  readonly applicationName?: string
  /** Runs, synchronously, for each notification on one of `channels`. */
  readonly onNotification: (message: Pg.Notification, connection: ListenConnection) => void
  /** Runs, synchronously, as soon as the connection errs or ends (not when its scope closes it). */
  readonly onLost?: () => void
}

export interface ListenConnection {
  /** NOTIFY on this connection, without waiting; an error is ignored (a lost connection is reported by `lost`). */
  readonly notify: (channel: string, payload: string) => void
  /** Completes once the connection has erred or ended. */
  readonly lost: Effect.Effect<void>
  readonly isLost: Effect.Effect<boolean>
}

/**
 * A connection that LISTENs on `options.channels` until the scope closes it. Fails when it cannot connect or
 * LISTEN (nothing is left open then).
 */
export const listen = (
  config: PgClient.PgClientConfig,
  options: ListenOptions,
): Effect.Effect<ListenConnection, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const lost = yield* Deferred.make<void>()
    const client = yield* Effect.acquireRelease(
      Effect.tryPromise(async () => {
        const client = new Pg.Client(clientConfig(config, options.applicationName))
        const connection: ListenConnection = {
          notify: (channel, payload) => {
            client.query("select pg_notify($1, $2)", [channel, payload]).catch(() => {})
          },
          lost: Deferred.await(lost),
          isLost: Deferred.isDone(lost),
        }
        client.on("notification", (message) => {
          if (options.channels.includes(message.channel)) options.onNotification(message, connection)
        })
        const onLost = () => {
          options.onLost?.()
          Deferred.unsafeDone(lost, Effect.void)
        }
        client.on("error", onLost)
        client.on("end", onLost)
        try {
          await client.connect()
          for (const channel of options.channels) await client.query(`LISTEN ${Pg.escapeIdentifier(channel)}`)
        } catch (error) {
          close(client)
          throw error
        }
        return { client, connection }
      }),
      ({ client }) => Effect.sync(() => close(client)),
    )
    return client.connection
  })

/**
 * LISTEN for as long as the scope lives, surviving database restarts: each connection runs `whileConnected` (by
 * default: until it is lost); when that ends, or the connection could not be made, a new one is opened after 1 s,
 * backing off to `maxDelay`. Notifications sent while disconnected are lost: `whileConnected` is where a listener
 * catches up.
 */
export const listenForever = (
  config: PgClient.PgClientConfig,
  options: ListenOptions & {
    readonly maxDelay: Duration.DurationInput
    readonly whileConnected?: (connection: ListenConnection) => Effect.Effect<void, unknown, Scope.Scope>
  },
): Effect.Effect<never> => {
  const { whileConnected = (connection: ListenConnection) => connection.lost } = options
  const session = listen(config, options).pipe(
    Effect.flatMap(whileConnected),
    Effect.scoped,
    Effect.catchAll(() => Effect.void),
    Effect.zipRight(Effect.logDebug("LISTEN connection closed; reconnecting")),
  )
  return session.pipe(
    Effect.repeat(Schedule.union(Schedule.exponential("1 second", 1.5), Schedule.spaced(options.maxDelay))),
    Effect.zipRight(Effect.never),
  )
}

const close = (client: Pg.Client) => {
  client.removeAllListeners()
  client.on("error", () => {})
  client.end().catch(() => {})
}
