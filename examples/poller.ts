/**
 * A complete poller of new and changed incidents (docs/api.md "Following new incidents"): it follows
 * GET /v1/incidents/changes with the client, prints one JSON line per change, and keeps its place in a file,
 * so a restart resumes exactly where it stopped (nothing is skipped; a change may come twice after a crash).
 *
 *   BASE_URL=https://incidents.example.com API_KEY=dsk_… bun examples/poller.ts
 *
 * The token is saved after each page it has handled (written to a temporary file, then renamed over the old one, so
 * a crash or kill -9 never leaves a half-written token): a restart replays at most the page it was in. Stop it with
 * Ctrl-C (SIGINT) or SIGTERM. A failure (a wrong key, an unreachable server) ends it with one line on stderr, exit 1.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { ApiError, createClient } from "decoy-incident-service/client"

const tokenFile = process.env.TOKEN_FILE ?? ".incident-feed-token"

/** Atomically: a reader (the next start) sees the old token or the new one, never a part of one. */
const save = (token: string) => {
  const temporary = `${tokenFile}.${process.pid}.tmp`
  writeFileSync(temporary, token)
  renameSync(temporary, tokenFile)
}

/** What to do about a failure, in one line. */
const explain = (error: unknown): string => {
  if (!(error instanceof ApiError)) return `poller: ${error instanceof Error ? error.message : String(error)}`
  if (error.code === "unauthorized" || error.status === 401) return `poller: ${error.message} (check API_KEY)`
  if (error.status === 403) return `poller: ${error.message} (the key needs the incidents:read scope)`
  if (error.status === 0) return `poller: ${error.message} (check BASE_URL)`
  return `poller: ${error.message}`
}

const stop = new AbortController()
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => stop.abort())

try {
  const client = createClient({
    baseUrl: process.env.BASE_URL ?? "http://localhost:8080",
    apiKey: process.env.API_KEY ?? "",
  })
  const feed = client.incidents.follow({
    after: existsSync(tokenFile) ? readFileSync(tokenFile, "utf8").trim() : undefined,
    pollIntervalMs: Number(process.env.POLL_INTERVAL_MS ?? 2000),
    signal: stop.signal,
    // Called once a whole page has been handled (printed): save the place then.
    onToken: save,
  })
  for await (const incident of feed) {
    console.log(
      JSON.stringify({ id: incident.id, status: incident.status, severity: incident.severity, title: incident.title }),
    )
  }
  if (feed.token !== undefined) save(feed.token)
} catch (error) {
  console.error(explain(error).replace(/\s+/g, " "))
  process.exit(1)
}
