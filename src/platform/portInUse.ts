import { Effect, Option } from "effect"
import { settingsConfig } from "./config.ts"

/** The port of a listener that could not start because the port is taken (Bun: EADDRINUSE), else undefined. */
export const portInUse = (defect: unknown): number | undefined => {
  if (!(defect instanceof Error)) return undefined
  const code = (defect as { code?: unknown }).code
  const match = /port (\d+) in use/i.exec(defect.message)
  if (code !== "EADDRINUSE" && match === null) return undefined
  return match ? Number(match[1]) : undefined
}

/** Every listener's port variable: named when the taken port is none of the configured ones (cannot happen). */
const ANY_PORT = "PORT, INGEST_PORT, OPS_PORT or CONSOLE_PORT"

export const portInUseLine = (
  port: number,
  settings: { host: string; port: number; ingestPort: number; opsPort: number; consolePort: number } | undefined,
) => {
  const variable =
    settings === undefined
      ? ANY_PORT
      : [
          ["PORT", settings.port],
          ["INGEST_PORT", settings.ingestPort],
          ["OPS_PORT", settings.opsPort],
          ["CONSOLE_PORT", settings.consolePort],
        ]
          .filter(([, value]) => value === port)
          .map(([name]) => name)
          .join(" / ") || ANY_PORT
  const host = settings?.host ?? "the configured host"
  return `cannot listen on ${host}:${port} (${variable}): the port is in use by another process; stop it or set ${variable} to a free port (0 picks any)`
}

/**
 * `bun run start` on a port another process holds: one line naming the port and its variable, exit 1, instead of the
 * runtime's stack trace. Any other defect goes on as it was.
 */
export const exitOnPortInUse = (defect: unknown): Effect.Effect<never> => {
  const port = portInUse(defect)
  if (port === undefined) return Effect.die(defect)
  return Effect.flatMap(Effect.option(settingsConfig), (settings) =>
    Effect.sync(() => {
      console.error(portInUseLine(port, Option.getOrUndefined(settings)))
      process.exit(1)
    }),
  )
}
