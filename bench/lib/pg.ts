import { SQL } from "bun"
import { PG_BASE } from "./common.ts"

/** The benchmark database: a fresh `dsvc_bench_<timestamp>` per run, dropped at the end. */

export const databaseUrl = (database: string) => `${PG_BASE}/${database}`

const maintenance = () => new SQL({ url: databaseUrl("postgres"), max: 1 })

export const newDatabaseName = () =>
  `dsvc_bench_${new Date()
    .toISOString()
    .replace(/[-:TZ.]/g, "")
    .slice(0, 14)}`

export const createDatabase = async (database: string) => {
  if (!/^dsvc_bench_[a-z0-9_]+$/.test(database)) throw new Error(`refusing database name ${database}`)
  const sql = maintenance()
  try {
    await sql.unsafe(`create database ${database}`)
  } finally {
    await sql.close()
  }
}

export const databaseExists = async (database: string) => {
  const sql = maintenance()
  try {
    const rows = await sql`select 1 from pg_database where datname = ${database}`
    return rows.length > 0
  } finally {
    await sql.close()
  }
}

export const dropDatabase = async (database: string) => {
  if (!/^dsvc_bench_[a-z0-9_]+$/.test(database)) throw new Error(`refusing to drop ${database}`)
  const sql = maintenance()
  try {
    await sql.unsafe(`drop database if exists ${database} with (force)`)
  } finally {
    await sql.close()
  }
}

export const postgresVersion = async (): Promise<string> => {
  const sql = maintenance()
  try {
    const rows = await sql`show server_version`
    return String((rows[0] as { server_version: string }).server_version)
  } finally {
    await sql.close()
  }
}
