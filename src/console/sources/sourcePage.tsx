import type { IncidentSource, IncidentSummary } from "../../domain/models.ts"
import {
  Csrf,
  DataTable,
  IncidentMarkers,
  ServiceText,
  SeverityBadge,
  StatusBadge,
  Time,
  type Viewer,
} from "../components.tsx"
import { isAdmin, Layout } from "../layout.tsx"
import { InsideBanner, SourceFacts } from "./sourceFacts.tsx"
import { SOURCE_EVENTS_COUNTED } from "./sourceReads.ts"

/** The active ignore rule whose network holds the address (the most specific), as the source page names it. */
export interface HoldingRule {
  readonly id: string
  readonly source: string
  readonly sensorName: string | null
  readonly port: number | null
  readonly eventType: string | null
}

/** The address's events of one type on one sensor, the sensor named. */
export interface EventCountView {
  readonly sensorId: string
  readonly sensorName: string
  readonly type: string
  readonly n: number
}

/** A sensor the ignore form offers (the organization's sensors that are not revoked). */
export interface SensorChoice {
  readonly id: string
  readonly name: string
}

/**
 * "Ignore activity like this" for an address (administrators): the ignore rule form of Settings → Ignore rules,
 * filled with the address, posted there; it answers with its confirmation page, so nothing is stored before the
 * administrator confirms the rule as it will be kept.
 */
const IgnoreForm = (props: { viewer: Viewer; ip: string; sensors: ReadonlyArray<SensorChoice> }) => (
  <details class="panel src-ignore" id="ignore">
    <summary>Ignore activity like this…</summary>
    <p class="small muted">
      Events from this address that match the rule will be kept but open no incident and send no alert, from the moment
      the rule is added; nothing already stored changes. You confirm the rule on the next page.
    </p>
    <form method="post" action="/settings/ignore">
      <Csrf token={props.viewer.csrfToken} />
      <div class="field">
        <label for="src-ignore-source">Source address or network</label>
        <input
          id="src-ignore-source"
          name="source"
          type="text"
          class="mono"
          required
          maxLength={64}
          value={props.ip}
          aria-describedby="src-ignore-source-hint"
        />
        <p id="src-ignore-source-hint" class="small muted">
          Widen it to a network (such as <code>203.0.113.0/24</code>) to ignore its neighbours too.
        </p>
      </div>
      <div class="field">
        <label for="src-ignore-sensor">Sensor</label>
        <select id="src-ignore-sensor" name="sensor">
          <option value="">Any sensor</option>
          {props.sensors.map((x) => (
            <option value={x.id}>{x.name}</option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="src-ignore-note">Why it is harmless (optional)</label>
        <input id="src-ignore-note" name="note" type="text" maxLength={500} placeholder="our vulnerability scanner" />
      </div>
      <div class="field">
        <label for="src-ignore-expires">Expires (optional: 12h, 7d or an RFC 3339 time)</label>
        <input id="src-ignore-expires" name="expires" type="text" maxLength={64} />
      </div>
      <button type="submit">Review the rule</button>
    </form>
  </details>
)

/** What the rule narrows to, in words: "on sensor x, port 22, type ssh.login_attempt", or nothing. */
const narrowing = (rule: HoldingRule) =>
  [
    rule.sensorName === null ? undefined : `on sensor ${rule.sensorName}`,
    rule.port === null ? undefined : `port ${rule.port}`,
    rule.eventType === null ? undefined : `type ${rule.eventType}`,
  ].filter((part) => part !== undefined)

/**
 * A source address across the organization's sensors (the console's face of GET /v1/sources/{ip}): inside or
 * outside, what enrichment knows of it (attacker text, boxed), when it was first and last seen, its incidents on every
 * sensor and the ignore rule holding it. Read-only, for every user of the organization.
 */
export const SourcePage = (props: {
  viewer: Viewer
  ip: string
  /** Judged by the organization's networks as they are now. */
  source: IncidentSource
  firstSeenAt: Date | null
  lastSeenAt: Date | null
  incidentCount: number
  sensorCount: number
  incidents: ReadonlyArray<IncidentSummary>
  rule: HoldingRule | undefined
  /** Its events by sensor and type, most first (absent: not counted). */
  eventCounts?: ReadonlyArray<EventCountView>
  /** More events than were counted: each count is a lower bound. */
  countsCapped?: boolean
  /** The sensors the ignore form offers (administrators). */
  sensors?: ReadonlyArray<SensorChoice>
  now: Date
}) => {
  const eventsHref = `/events?${new URLSearchParams({ sourceIp: props.ip }).toString()}`
  const counts = props.eventCounts ?? []
  const bySensor = [
    ...counts
      .reduce(
        (acc, c) => acc.set(c.sensorId, { name: c.sensorName, n: (acc.get(c.sensorId)?.n ?? 0) + c.n }),
        new Map<string, { name: string; n: number }>(),
      )
      .values(),
  ].sort((a, b) => b.n - a.n)
  const eventTotal = counts.reduce((sum, c) => sum + c.n, 0)
  const rule = props.rule
  return (
    <Layout title={`Source ${props.ip}`} viewer={props.viewer} section="incidents">
      <p class="small">
        <a href="/incidents">← Incidents</a>
      </p>
      <h1>
        Source <span class="mono">{props.ip}</span>
      </h1>
      {props.source.scope === "internal" && props.source.network !== null && (
        <InsideBanner network={props.source.network} ip={props.ip} />
      )}
      {rule !== undefined && (
        <div class="notice notice-info" role="note" id="holding-rule">
          <p>
            <strong>Ignored.</strong> Ignore rule <a href={`/settings/ignore#${rule.id}`}>{rule.id}</a> matches{" "}
            <span class="mono">{rule.source}</span>
            {narrowing(rule).length > 0 && <> ({narrowing(rule).join(", ")})</>}: the events from this address that it
            matches are kept but open no incident and send no alert.
          </p>
        </div>
      )}
      <div class="panel">
        <dl class="facts">
          <dt>Where</dt>
          <dd id="source-scope">
            {props.source.scope === "internal" && props.source.network !== null ? (
              <>
                Inside your network: {props.source.network.label}{" "}
                <span class="mono muted">{props.source.network.cidr}</span>
              </>
            ) : (
              <>
                External{" "}
                <span class="muted small">
                  (outside <a href="/settings/networks">your networks</a>)
                </span>
              </>
            )}
          </dd>
          <SourceFacts source={props.source} />
          <dt>First seen</dt>
          <dd>
            <Time at={props.firstSeenAt} now={props.now} />
          </dd>
          <dt>Last seen</dt>
          <dd>
            <Time at={props.lastSeenAt} now={props.now} />
          </dd>
          <dt>Incidents</dt>
          <dd id="source-counts">
            {props.incidentCount} on {props.sensorCount} {props.sensorCount === 1 ? "sensor" : "sensors"}
          </dd>
          <dt>Events</dt>
          <dd id="source-events">
            {eventTotal === 0
              ? "none outside ignore rules"
              : `${props.countsCapped === true ? "at least " : ""}${eventTotal}`}
            {bySensor.length > 0 && (
              <span class="muted"> ({bySensor.map((x) => `${x.n} on ${x.name}`).join(", ")})</span>
            )}{" "}
            · <a href={eventsHref}>Search its events</a>
          </dd>
        </dl>
      </div>
      {isAdmin(props.viewer) && <IgnoreForm viewer={props.viewer} ip={props.ip} sensors={props.sensors ?? []} />}
      <h2>Incidents from this address, on every sensor</h2>
      <DataTable
        columns={["Severity", "Incident", "Sensor", "Events", "First seen", "Last seen", "Status"]}
        empty="No incident: every event from this address was ignored."
        rows={props.incidents}
      >
        {(i) => (
          <tr id={i.id}>
            <td>
              <SeverityBadge severity={i.severity} />
            </td>
            <td>
              <a href={`/incidents/${i.id}`}>
                <ServiceText text={i.title} known={[i.sensor.name]} />
              </a>
              <IncidentMarkers incident={i} />
              <div class="muted small mono">{i.id}</div>
            </td>
            <td class="source-sensor">{i.sensor.name}</td>
            <td>{i.eventCount}</td>
            <td>
              <Time at={i.firstSeenAt} now={props.now} />
            </td>
            <td>
              <Time at={i.lastSeenAt} now={props.now} />
            </td>
            <td>
              <StatusBadge status={i.status} />
            </td>
          </tr>
        )}
      </DataTable>
      {counts.length > 0 && (
        <>
          <h2 id="source-event-counts">Events by type and sensor</h2>
          {props.countsCapped === true && (
            <p class="small muted">
              Counted among its newest {SOURCE_EVENTS_COUNTED.toLocaleString("en-US")} events: each count is a lower
              bound.
            </p>
          )}
          <DataTable columns={["Type", "Sensor", "Events", "Search"]} empty="No event." rows={counts}>
            {(c) => (
              <tr>
                <td class="mono">{c.type}</td>
                <td>{c.sensorName}</td>
                <td class="src-count">{c.n}</td>
                <td>
                  <a
                    href={`/events?${new URLSearchParams({ sourceIp: props.ip, sensorId: c.sensorId, type: c.type }).toString()}`}
                  >
                    These events
                  </a>
                </td>
              </tr>
            )}
          </DataTable>
        </>
      )}
      {props.incidentCount > props.incidents.length && (
        <p class="muted small">
          The {props.incidents.length} with the latest activity of {props.incidentCount} are shown;{" "}
          <a href={eventsHref}>the Events page</a> lists every event from this address.
        </p>
      )}
    </Layout>
  )
}

/** An address no sensor of the organization has seen (or another organization's: the same page). */
export const UnknownSourcePage = (props: { viewer: Viewer; ip: string }) => (
  <Layout title="Source not seen" viewer={props.viewer} section="incidents">
    <p class="small">
      <a href="/incidents">← Incidents</a>
    </p>
    <div class="panel" id="source-unknown">
      <h1>
        Nothing is known of <span class="mono">{props.ip}</span>
      </h1>
      <p>
        No sensor of your organization has recorded an event from this address: it has no incident and no event here.
      </p>
      <p>
        <a href={`/events?${new URLSearchParams({ sourceIp: props.ip }).toString()}`}>Search its events</a> ·{" "}
        <a href="/incidents">Go to the incidents</a>
      </p>
    </div>
  </Layout>
)

/** A path that is no IP address: the page says what a source page takes (the text itself is not shown back). */
export const NotAnAddressPage = (props: { viewer: Viewer }) => (
  <Layout title="Not an address" viewer={props.viewer} section="incidents">
    <div class="panel" id="source-invalid">
      <h1>Not an IP address</h1>
      <p>
        A source page is <span class="mono">/sources/</span> followed by one IPv4 or IPv6 address, such as{" "}
        <span class="mono">/sources/203.0.113.7</span> or <span class="mono">/sources/2001:db8::7</span>; what was given
        is neither.
      </p>
      <p>
        <a href="/incidents">Go to the incidents</a>
      </p>
    </div>
  </Layout>
)
