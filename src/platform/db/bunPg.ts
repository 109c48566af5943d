import { Reactivity } from "@effect/experimental"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { PgClient } from "@effect/sql-pg"
import { SQL } from "bun"
import { Context, Duration, Effect, Layer, Redacted, type Scope, Stream } from "effect"
import { registerDirectRead } from "./directReads.ts"
import { listen } from "./listen.ts"

/**
 * `PgClient` on Bun's built-in PostgreSQL client (`Bun.SQL`) instead of the `pg` driver: the service keeps writing
 * `SqlClient`/`PgClient` statements, compiled by @effect/sql-pg's own compiler; only the connection under them changes.
 * Bun's client keeps each connection's last 1,024 statements prepared (PostgreSQL parses and plans a list query once
 * per connection instead of on every request) and does the protocol work in native code.
 *
 * What this layer adds so the services see no difference (test/db/bunDriver.test.ts compares both drivers):
 * - the pool's wait: a query that finds no free connection within `poolWait` fails as `pg-pool` does ("timeout exceeded
 *   when trying to connect", which the listeners answer 503 busy); Bun's own queue would wait without end;
 * - the query time-out (`queryTimeout`): the query is cancelled and fails as `pg`'s does ("Query read timeout");
 * - errors: PostgreSQL's SQLSTATE is the cause's `code` (`pg` puts it there; Bun puts it in `errno`);
 * - statements without parameters (transaction control, migrations of several statements) run as simple queries;
 * - LISTEN/NOTIFY stay on `pg` (platform/db/listen.ts): Bun's client has none.
 */

export interface BunPgOptions {
  /** postgres://user:password@host:port/database; `?host=/dir` for a Unix socket, `?sslmode=` as with `pg`. */
  readonly url: Redacted.Redacted<string>
  readonly maxConnections: number
  readonly applicationName: string
  /** How long a query waits for a free connection (or for a new one) before it fails as busy. */
  readonly poolWait: Duration.DurationInput
  /** A query without an answer after this long is cancelled and fails. None: no limit (the admin tool). */
  readonly queryTimeout?: Duration.DurationInput | undefined
  /** Session settings sent at connect (statement_timeout, idle_in_transaction_session_timeout, …). */
  readonly sessionSettings?: Readonly<Record<string, string | number>> | undefined
  readonly transformResultNames?: ((name: string) => string) | undefined
  readonly transformQueryNames?: ((name: string) => string) | undefined
  readonly transformJson?: boolean | undefined
}

/** The URL parameters `pg` sends to PostgreSQL as session settings at connect; so does this client. */
const SESSION_PARAMETERS = ["statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout", "options"]

/** The parts of a `pg` connection URL, as Bun's options and as `PgClientConfig` (which LISTEN connections use). */
const connectionOf = (url: string) => {
  const parsed = new URL(url)
  const settings: Record<string, string> = {}
  for (const name of SESSION_PARAMETERS) {
    const value = parsed.searchParams.get(name)
    if (value !== null) settings[name] = value
  }
  const socketDir = parsed.searchParams.get("host") ?? undefined
  const sslmode = parsed.searchParams.get("sslmode") ?? undefined
  const port = parsed.port === "" ? 5432 : Number(parsed.port)
  return {
    hostname: socketDir?.startsWith("/") ? "localhost" : parsed.hostname || "localhost",
    port,
    username: decodeURIComponent(parsed.username) || "postgres",
    password: parsed.password === "" ? undefined : decodeURIComponent(parsed.password),
    database: decodeURIComponent(parsed.pathname.replace(/^\//, "")) || undefined,
    path: socketDir?.startsWith("/") ? socketDir : undefined,
    ssl: sslmode as "disable" | "prefer" | "require" | "verify-ca" | "verify-full" | undefined,
    settings,
  }
}

/**
 * Bun's connection failures in the system's words, as `pg` reports them (the start-up line and the logs name the
 * cause an operator knows: ECONNREFUSED, a terminated connection, a time-out).
 */
const CONNECTION_WORDS: Readonly<Record<string, string>> = {
  ERR_POSTGRES_CONNECTION_REFUSED: "connection refused (ECONNREFUSED)",
  ERR_POSTGRES_CONNECTION_CLOSED: "Connection terminated",
  ERR_POSTGRES_CONNECTION_TIMEOUT: "connection timed out (ETIMEDOUT)",
  ERR_POSTGRES_IDLE_TIMEOUT: "Connection terminated (idle time-out)",
  ERR_POSTGRES_LIFETIME_TIMEOUT: "Connection terminated (lifetime)",
}

/**
 * What a Bun error becomes: PostgreSQL's SQLSTATE as `code` (`pg` puts it there; Bun in `errno`), or Bun's own code
 * with the failure in the words above.
 */
const driverCause = (error: unknown): unknown => {
  if (!(error instanceof Error)) return error
  const e = error as Error & { code?: unknown; errno?: unknown; detail?: unknown; hint?: unknown; severity?: unknown }
  const sqlState = typeof e.errno === "string" && /^[0-9A-Z]{5}$/.test(e.errno) ? e.errno : undefined
  const bunCode = typeof e.code === "string" ? e.code : undefined
  const words = bunCode === undefined ? undefined : CONNECTION_WORDS[bunCode]
  const message =
    sqlState !== undefined || bunCode === undefined
      ? e.message
      : `${words === undefined ? e.message : `${words}: ${e.message}`} (${bunCode})`
  return Object.assign(new Error(message), {
    code: sqlState ?? bunCode,
    ...(typeof e.detail === "string" ? { detail: e.detail } : {}),
    ...(typeof e.hint === "string" ? { hint: e.hint } : {}),
    ...(typeof e.severity === "string" ? { severity: e.severity } : {}),
  })
}

const failed = (error: unknown, message = "Failed to execute statement") =>
  new SqlError({ cause: driverCause(error), message })

type Runner = Pick<SQL, "unsafe">

const IDLE_CONNECTION_SECONDS = 10

const noConnectionInTime = () =>
  new SqlError({ cause: new Error("timeout exceeded when trying to connect"), message: "Failed to acquire connection" })

/** What one connection of the pool is: a Bun client of its own, limited to that one connection. */
interface Member {
  readonly sql: SQL
  idleTimer?: ReturnType<typeof setTimeout> | undefined
}

/**
 * The pool: Bun clients of one connection each, opened when a statement finds none free (Bun's own pool opens all of
 * its `max` connections at the first query, so every process would hold its pools' full size) and closed once idle
 * for 10 s, as `pg`'s pool does. The most recently used is used first, so its prepared statements serve again. A
 * statement that finds every connection busy waits in order, for at most `waitMs`, by its own timer: a wait also ends
 * where the caller cannot be interrupted (@effect/sql acquires a transaction's connection uninterruptibly). A
 * connection handed to a wait that is being interrupted goes back to the pool.
 */
const makePool = (size: number, waitMs: number, open: () => SQL) => {
  const idle: Array<Member> = []
  const waiting = new Set<(member: Member) => void>()
  let count = 0
  let closed = false
  const retire = (member: Member) => {
    count--
    member.sql.close({ timeout: 0 }).catch(() => {})
  }
  const release = (member: Member) => {
    const next = waiting.values().next()
    if (!next.done) {
      waiting.delete(next.value)
      next.value(member)
      return
    }
    if (closed) return retire(member)
    idle.push(member)
    member.idleTimer = setTimeout(() => {
      const at = idle.indexOf(member)
      if (at >= 0) {
        idle.splice(at, 1)
        retire(member)
      }
    }, IDLE_CONNECTION_SECONDS * 1000)
  }
  /** A free connection at once (the most recently used, or a new one while under `size`), if there is one. */
  const takeNow = (): Member | undefined => {
    const free = idle.pop()
    if (free !== undefined) {
      clearTimeout(free.idleTimer)
      return free
    }
    if (count < size) {
      count++
      return { sql: open() }
    }
    return undefined
  }
  /** Waits in order for a connection, at most `waitMs`; the returned function stops waiting. */
  const wait = (granted: (member: Member) => void, timedOut: () => void): (() => void) => {
    const grant = (member: Member) => {
      clearTimeout(timer)
      granted(member)
    }
    const timer = setTimeout(() => {
      waiting.delete(grant)
      timedOut()
    }, waitMs)
    waiting.add(grant)
    return () => {
      clearTimeout(timer)
      waiting.delete(grant)
    }
  }
  const take: Effect.Effect<Member, SqlError> = Effect.suspend(() => {
    const free = takeNow()
    if (free !== undefined) return Effect.succeed(free)
    return Effect.async<Member, SqlError>((resume) => {
      let granted: Member | undefined
      const stop = wait(
        (member) => {
          granted = member
          resume(Effect.succeed(member))
        },
        () => resume(Effect.fail(noConnectionInTime())),
      )
      return Effect.sync(() => {
        if (granted !== undefined) release(granted)
        else stop()
      })
    })
  })
  const close = () => {
    closed = true
    for (const member of idle.splice(0)) {
      clearTimeout(member.idleTimer)
      retire(member)
    }
  }
  return { take, takeNow, wait, release, close }
}

export const make = (
  options: BunPgOptions,
): Effect.Effect<PgClient.PgClient, SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function* () {
    const url = Redacted.value(options.url)
    const target = connectionOf(url)
    const open = () =>
      new SQL({
        adapter: "postgres",
        hostname: target.hostname,
        port: target.port,
        username: target.username,
        ...(target.password === undefined ? {} : { password: target.password }),
        ...(target.database === undefined ? {} : { database: target.database }),
        ...(target.path === undefined ? {} : { path: target.path }),
        ...(target.ssl === undefined ? {} : { ssl: target.ssl }),
        max: 1,
        connectionTimeout: Math.max(1, Math.ceil(Duration.toSeconds(options.poolWait))),
        prepare: true,
        connection: { ...options.sessionSettings, ...target.settings, application_name: options.applicationName },
      })
    // A statement (or a transaction, for its whole life) holds one connection of the pool; the wait for one is the
    // pool's to bound. The connection is waited for first, then the query runs under its own time-out: a slow query
    // is not "busy".
    const pool = makePool(options.maxConnections, Duration.toMillis(Duration.decode(options.poolWait)), open)
    yield* Effect.addFinalizer(() => Effect.sync(pool.close))
    const withConnection = <A, E>(use: (sql: SQL) => Effect.Effect<A, E>): Effect.Effect<A, E | SqlError> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(restore(pool.take), (member) =>
          restore(use(member.sql)).pipe(Effect.ensuring(Effect.sync(() => pool.release(member)))),
        ),
      )

    const queryTimeoutMs =
      options.queryTimeout === undefined ? undefined : Duration.toMillis(Duration.decode(options.queryTimeout))

    /**
     * Starts one statement on `runner` under the query time-out and calls `settle` once with its outcome; the
     * returned function cancels it (no outcome is given after that). The timer is a plain one: a time-out made of
     * fibers cost a quarter of the client's CPU per query.
     */
    const startQuery = <A>(
      runner: Runner,
      sql: string,
      params: ReadonlyArray<unknown>,
      shape: "rows" | "values" | "raw",
      settle: (outcome: Effect.Effect<A, SqlError>) => void,
    ): (() => void) => {
      let query = params.length === 0 ? runner.unsafe(sql).simple() : runner.unsafe(sql, params as Array<unknown>)
      if (shape === "values") query = query.values()
      let settled = false
      const once = (outcome: Effect.Effect<A, SqlError>) => {
        if (settled) return
        settled = true
        if (timer !== undefined) clearTimeout(timer)
        settle(outcome)
      }
      const timer =
        queryTimeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              query.cancel()
              once(
                Effect.fail(
                  new SqlError({ cause: new Error("Query read timeout"), message: "Failed to execute statement" }),
                ),
              )
            }, queryTimeoutMs)
      query.then(
        (result) => once(Effect.succeed(result as A)),
        (error) => once(Effect.fail(failed(error))),
      )
      return () => {
        settled = true
        if (timer !== undefined) clearTimeout(timer)
        query.cancel()
      }
    }

    /** Runs one statement on `runner`, cancelling it when interrupted or when the query time-out passes. */
    const runQuery = <A>(
      runner: Runner,
      sql: string,
      params: ReadonlyArray<unknown>,
      shape: "rows" | "values" | "raw",
    ): Effect.Effect<A, SqlError> =>
      Effect.async<A, SqlError>((resume) => Effect.sync(startQuery(runner, sql, params, shape, resume)))

    /**
     * A statement outside any transaction in one asynchronous step: a connection from the pool (or the wait for one),
     * the query under its time-out, the connection back. The same pool, time-outs and errors as a statement through
     * @effect/sql, without its per-statement scope, span and acquisition effects (62–78 µs less CPU per query;
     * BENCHMARKS.md). Interrupted, it stops waiting or cancels the query and gives the connection back.
     */
    const readDirect = <A>(text: string, params: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<A>, SqlError> =>
      Effect.async<ReadonlyArray<A>, SqlError>((resume) => {
        let member: Member | undefined
        let cancelQuery: (() => void) | undefined
        let done = false
        const finish = (outcome: Effect.Effect<ReadonlyArray<A>, SqlError>) => {
          if (done) return
          done = true
          if (member !== undefined) pool.release(member)
          resume(outcome)
        }
        const run = (granted: Member) => {
          member = granted
          cancelQuery = startQuery(granted.sql, text, params, "rows", finish)
        }
        const free = pool.takeNow()
        const stopWaiting =
          free === undefined ? pool.wait(run, () => finish(Effect.fail(noConnectionInTime()))) : undefined
        if (free !== undefined) run(free)
        return Effect.sync(() => {
          if (done) return
          done = true
          if (cancelQuery !== undefined) cancelQuery()
          if (member !== undefined) pool.release(member)
          else stopWaiting?.()
        })
      })

    class BunConnection implements Connection {
      constructor(private readonly reserved: Runner | undefined) {}
      private run<A>(sql: string, params: ReadonlyArray<unknown>, shape: "rows" | "values" | "raw") {
        if (this.reserved !== undefined) return runQuery<A>(this.reserved, sql, params, shape)
        return withConnection((client) => runQuery<A>(client, sql, params, shape))
      }
      execute(
        sql: string,
        params: ReadonlyArray<unknown>,
        transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined,
      ) {
        const rows = this.run<ReadonlyArray<object>>(sql, params, "rows")
        return transformRows === undefined ? rows : Effect.map(rows, transformRows)
      }
      executeRaw(sql: string, params: ReadonlyArray<unknown>) {
        return this.run<unknown>(sql, params, "raw")
      }
      executeValues(sql: string, params: ReadonlyArray<unknown>) {
        return this.run<ReadonlyArray<ReadonlyArray<unknown>>>(sql, params, "values")
      }
      executeUnprepared(
        sql: string,
        params: ReadonlyArray<unknown>,
        transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined,
      ) {
        return this.execute(sql, params, transformRows)
      }
      executeStream(
        sql: string,
        params: ReadonlyArray<unknown>,
        transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined,
      ) {
        // The service streams nothing from the database: the result is read whole, then streamed row by row.
        return Stream.fromIterableEffect(this.execute(sql, params, transformRows))
      }
    }

    /** A transaction's connection: taken from the pool until its scope closes. */
    const reserve = Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(pool.take), (member) =>
        Effect.as(
          Effect.addFinalizer(() => Effect.sync(() => pool.release(member))),
          new BunConnection(member.sql) as Connection,
        ),
      ),
    )

    // A first statement, so a wrong URL or an unreachable server fails the layer (as PgClient's `SELECT 1` does).
    yield* withConnection((client) => runQuery(client, "select 1", [], "rows")).pipe(
      Effect.mapError((e) => new SqlError({ cause: e.cause, message: "PgClient: Failed to connect" })),
      Effect.timeoutFail({
        duration: options.poolWait,
        onTimeout: () =>
          new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" }),
      }),
    )

    const compiler = PgClient.makeCompiler(options.transformQueryNames, options.transformJson)
    const transformRows = options.transformResultNames
      ? Statement.defaultTransforms(options.transformResultNames, options.transformJson).array
      : undefined

    const config: PgClient.PgClientConfig = {
      url: options.url,
      host: target.path ?? target.hostname,
      port: target.port,
      username: target.username,
      ...(target.password === undefined ? {} : { password: Redacted.make(target.password) }),
      ...(target.database === undefined ? {} : { database: target.database }),
      applicationName: options.applicationName,
      maxConnections: options.maxConnections,
    }

    const client = yield* Client.make({
      acquirer: Effect.succeed(new BunConnection(undefined)),
      transactionAcquirer: reserve,
      compiler,
      spanAttributes: [
        ["db.system.name", "postgresql"],
        ["db.namespace", target.database ?? target.username],
        ["server.address", target.hostname],
        ["server.port", target.port],
      ],
      transformRows,
    })
    registerDirectRead(client, readDirect)

    const pgClient: PgClient.PgClient = Object.assign(client, {
      [PgClient.TypeId]: PgClient.TypeId as PgClient.TypeId,
      config,
      json: (value: unknown) => PgJson(value, undefined, undefined),
      // LISTEN needs a connection of its own that Bun's client cannot give: `pg`, as everywhere in the service.
      listen: (channel: string) =>
        Stream.asyncPush<string, SqlError>((emit) =>
          listen(config, {
            channels: [channel],
            onNotification: (message) => {
              if (message.payload !== undefined) emit.single(message.payload)
            },
          }).pipe(Effect.mapError((error) => failed(error, "Failed to listen"))),
        ),
      notify: (channel: string, payload: string) =>
        Effect.asVoid(
          withConnection((client) => runQuery(client, "select pg_notify($1, $2)", [channel, payload], "rows")),
        ).pipe(Effect.mapError((e) => new SqlError({ cause: e.cause, message: "Failed to notify" }))),
    })
    return pgClient
  })

/** `sql.json(value)`: the compiler sends the value itself as the parameter (Bun writes it as JSON). */
const PgJson = Statement.custom<PgClient.PgCustom>("PgJson")

/** The layer: `PgClient` and `SqlClient`, as `PgClient.layer` gives them. */
export const layer = (options: BunPgOptions): Layer.Layer<PgClient.PgClient | Client.SqlClient, SqlError> =>
  Layer.scopedContext(
    Effect.map(make(options), (client) =>
      Context.make(PgClient.PgClient, client).pipe(Context.add(Client.SqlClient, client)),
    ),
  ).pipe(Layer.provide(Reactivity.layer))
