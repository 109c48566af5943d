import type { IncidentSource, IncidentSummary } from "../../domain/models.ts"
import { DataTable, ServiceText, SeverityBadge, StatusBadge, Time, type Viewer } from "../components.tsx"
import { IncidentMarkers } from "../incidents/incidentsPage.tsx"
import { Layout } from "../layout.tsx"
import { InsideBanner, SourceFacts } from "./sourceFacts.tsx"

/** The active ignore rule whose network holds the address (the most specific), as the source page names it. */
export interface HoldingRule {
  readonly id: string
  readonly source: string
  readonly sensorName: string | null
  readonly port: number | null
  readonly eventType: string | null
}

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
  now: Date
}) => {
  const eventsHref = `/events?${new URLSearchParams({ sourceIp: props.ip }).toString()}`
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
          <dd>
            <a href={eventsHref}>Every event from this address</a>
          </dd>
        </dl>
      </div>
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
      {props.incidentCount > props.incidents.length && (
        <p class="muted small">
          The {props.incidents.length} with the latest activity of {props.incidentCount} are shown;{" "}
          <a href={eventsHref}>the Events page</a> lists every event from this address.
        </p>
      )}
    </Layout>
  )
}
