/** How a sensor is doing, in words: its status, its heartbeat, the warning about silent sensors. */

/** Value sent, label, and the interval in seconds it sets (null: none expected). */
export const HEARTBEATS: ReadonlyArray<readonly [string, string, number | null]> = [
  ["", "none expected", null],
  ["60s", "every minute", 60],
  ["5m", "every 5 minutes", 300],
  ["15m", "every 15 minutes", 900],
  ["1h", "every hour", 3600],
  ["24h", "every day", 86400],
]

export const STATUS_TEXT: Readonly<Record<string, string>> = {
  alive: "heard from within three heartbeat intervals",
  silent: "missed three heartbeats",
  unknown: "no heartbeat expected, or none received yet",
  revoked: "its token is refused",
}

export const StatusText = ({ status }: { status: string }) => (
  <span
    class={`status ${status === "alive" ? "status-closed" : status === "silent" ? "status-silent" : ""}`}
    title={STATUS_TEXT[status] ?? ""}
  >
    {status}
  </span>
)

/** Silent sensors, said first and as a warning (the alert channels that opted in were told too). */
export const SilentNotice = ({ count, link }: { count: number; link?: boolean }) =>
  count > 0 ? (
    <div class="notice notice-warn" role="status">
      <p>
        <strong>{count === 1 ? "1 sensor is silent" : `${count} sensors are silent`}</strong>:{" "}
        {count === 1 ? "it has" : "they have"} missed three heartbeats.{" "}
        {link === true && <a href="/settings/sensors">See the sensors</a>}
      </p>
    </div>
  ) : null

export const heartbeatText = (seconds: number | null) => {
  if (seconds === null) return "none expected"
  if (seconds % 3600 === 0) return `every ${seconds / 3600} h`
  if (seconds % 60 === 0) return `every ${seconds / 60} min`
  return `every ${seconds} s`
}
