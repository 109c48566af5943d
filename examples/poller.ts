/**
 * A complete poller of new and changed incidents (README "Polling for new incidents"): it follows
 * GET /v1/incidents/changes with the client (D34), prints one JSON line per change, and keeps its place in a file,
 * so a restart resumes exactly where it stopped (D33: nothing is skipped; a change may come twice after a crash).
 *
 *   BASE_URL=https://incidents.example.com API_KEY=dsk_… bun examples/poller.ts
 *
 * Stop it with Ctrl-C (SIGINT) or SIGTERM; it saves its token and exits.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { createClient } from "decoy-incident-service/client"

const tokenFile = process.env.TOKEN_FILE ?? ".incident-feed-token"
const client = createClient({
  baseUrl: process.env.BASE_URL ?? "http://localhost:8080",
  apiKey: process.env.API_KEY ?? "",
})
const stop = new AbortController()
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => stop.abort())

const feed = client.incidents.follow({
  after: existsSync(tokenFile) ? readFileSync(tokenFile, "utf8").trim() : undefined,
  pollIntervalMs: Number(process.env.POLL_INTERVAL_MS ?? 2000),
  signal: stop.signal,
})
let saved = feed.token ?? ""
for await (const incident of feed) {
  console.log(
    JSON.stringify({ id: incident.id, status: incident.status, severity: incident.severity, title: incident.title }),
  )
  // The token moves on once a whole page has been handled: save it then (and on the way out, below).
  if (feed.token !== undefined && feed.token !== saved) {
    saved = feed.token
    writeFileSync(tokenFile, saved)
  }
}
if (feed.token !== undefined) writeFileSync(tokenFile, feed.token)
