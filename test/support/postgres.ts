import { SQL } from "bun"
import { usingPostgres } from "./server.ts"

/** The machine's PostgreSQL, for tests that need one even on the embedded run (caches that exist only on it). */
export const MACHINE_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

export interface OwnDatabase {
  readonly name: string
  readonly url: string
  readonly drop: () => Promise<void>
}

const onServer = async (serverUrl: string, statement: string) => {
  const root = new SQL({ url: serverUrl, max: 1 })
  try {
    await root.unsafe(statement)
  } finally {
    await root.close()
  }
}

/**
 * A new, empty database on the same PostgreSQL as `serverUrl` (default: the run's DATABASE_URL, else the machine's),
 * for a file whose servers must not meet other files' rows: a dispatcher that would claim their deliveries, a
 * reseal that touches every organization. `prefix` names it, so a leftover says which file made it.
 */
export const newPostgresDatabase = async (
  prefix: string,
  serverUrl = usingPostgres() ? (process.env.DATABASE_URL ?? "") : MACHINE_POSTGRES_URL,
): Promise<OwnDatabase> => {
  const name = `dsvc_${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`
  await onServer(serverUrl, `create database ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    drop: () => onServer(serverUrl, `drop database if exists ${name} with (force)`),
  }
}

/** On the PostgreSQL run, a database of the file's own; on the embedded run each server has its own already. */
export const ownDatabaseOnPostgresRun = (prefix: string): Promise<OwnDatabase | undefined> =>
  usingPostgres() ? newPostgresDatabase(prefix) : Promise.resolve(undefined)

/** The run's DATABASE_URL, or a new database of the machine's PostgreSQL for a file that needs PostgreSQL anyway. */
export const postgresForFile = async (prefix: string): Promise<{ url: string; own: OwnDatabase | undefined }> => {
  if (usingPostgres()) return { url: process.env.DATABASE_URL ?? "", own: undefined }
  const own = await newPostgresDatabase(prefix, MACHINE_POSTGRES_URL)
  return { url: own.url, own }
}
