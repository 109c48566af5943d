import { countIndicators, type IncidentIndicators } from "../../domain/indicators.ts"
import type { Incident } from "../../domain/models.ts"
import {
  Csrf,
  type Flash,
  FlashNotice,
  ServiceText,
  SeverityBadge,
  StatusBadge,
  Techniques,
  Time,
  type Viewer,
} from "../components.tsx"
import { EventsLeftOut, fitEvents } from "../eventTable.tsx"
import { canTriage, Layout } from "../layout.tsx"
import { InsideBanner, SourceFacts } from "../sources/sourceFacts.tsx"
import {
  CLOSE_REASON_LABELS,
  CloseFields,
  type HistoryEntry,
  IncidentHistory,
  IncidentNotes,
  type NoteEntry,
} from "./history.tsx"
import { IndicatorsPanel } from "./indicators.tsx"
import { Timeline } from "./timeline.tsx"

/**
 * An incident's page, the `url` target of the API and of alerts. It leads with what matters: the title and severity,
 * a bait credential used, who owns it and whether anyone acknowledged it (with the forms to do both), where the source
 * is and what is known of it, the other sensors that saw it; then the indicators (what was typed, fetched, dropped,
 * tried), the timeline with runs of one type folded, and last the history, notes and Close.
 */

/** The page's lead when a member event logged in with a credential the organization planted. */
const BaitBanner = () => (
  <div class="banner banner-bait" role="alert" id="banner-bait">
    <p class="banner-title">Bait credential used</p>
    <p>
      Someone logged in with a credential that works nowhere and exists only where you planted it: whoever did it read
      it there. Treat where it is planted, and the source, as compromised.
    </p>
  </div>
)

/** The page's lead when the source touched other decoys too: how many, and the source's own page. */
const OtherSensorsBanner = ({ n, ip }: { n: number; ip: string }) => (
  <div class="banner banner-linked" id="banner-other-sensors">
    <p>
      <strong>
        Also seen on {n} other {n === 1 ? "sensor" : "sensors"}
      </strong>{" "}
      within 7 days of this incident's activity.{" "}
      <a href={`/sources/${ip}`}>
        Everything from <span class="mono">{ip}</span>
      </a>
    </p>
  </div>
)

/** A console user the incident can be assigned to. */
export interface AssignableUser {
  readonly id: string
  readonly email: string
}

/** The assign select lists at most this many users. */
const USERS_LISTED = 500

/**
 * Triage: status, owner and acknowledgement, with the forms that change them (any user of the organization; the
 * POSTs answer 303 back here with a notice).
 */
const TriageHead = (props: {
  incident: Incident
  /** Whether the forms are shown: a viewer reads the triage state only. */
  triage: boolean
  csrf: string
  now: Date
  users: ReadonlyArray<AssignableUser>
  acknowledgedBy: string | undefined
}) => {
  const i = props.incident
  const users = props.users.slice(0, USERS_LISTED)
  const owner = users.find((u) => u.email === i.assignee)
  return (
    <div class="panel ind-head" id="triage">
      <dl class="facts">
        <dt>Status</dt>
        <dd id="status">
          <StatusBadge status={i.status} />
          {i.status === "closed" && i.closeReason !== null && (
            <span class="small"> ({CLOSE_REASON_LABELS[i.closeReason] ?? i.closeReason})</span>
          )}
          {props.triage && i.status === "open" && (
            <>
              {" "}
              <a href="#close" class="small">
                Close…
              </a>
            </>
          )}
        </dd>
        <dt>Owner</dt>
        <dd id="owner">{i.assignee ?? <span class="muted">Unassigned</span>}</dd>
        <dt>Acknowledged</dt>
        <dd id="acknowledged">
          {i.acknowledgedAt !== null ? (
            <>
              <Time at={i.acknowledgedAt} now={props.now} />
              {props.acknowledgedBy !== undefined && <> by {props.acknowledgedBy}</>}
            </>
          ) : (
            <span class="muted">Not yet</span>
          )}
        </dd>
      </dl>
      {props.triage && (
        <div class="ind-triage">
          {i.acknowledgedAt === null && (
            <form method="post" action={`/incidents/${i.id}/acknowledge`} class="inline" id="acknowledge">
              <Csrf token={props.csrf} />
              <button type="submit">Acknowledge</button>
            </form>
          )}
          <form method="post" action={`/incidents/${i.id}/assign`} class="inline ind-assign" id="assign">
            <Csrf token={props.csrf} />
            <label for="assignee">Owner</label>
            <select id="assignee" name="assignee">
              <option value="" selected={i.assignee === null}>
                Nobody (unassigned)
              </option>
              {users.map((u) => (
                <option value={u.id} selected={owner?.id === u.id}>
                  {u.email}
                </option>
              ))}
            </select>
            <button type="submit" class="secondary">
              Assign
            </button>
          </form>
        </div>
      )}
    </div>
  )
}

export const IncidentPage = (props: {
  viewer: Viewer
  incident: Incident
  more: string | undefined
  now: Date
  flash: Flash | undefined
  /** The recorded transitions and the notes, oldest first (none given: none shown). */
  history?: ReadonlyArray<HistoryEntry> | undefined
  notes?: ReadonlyArray<NoteEntry> | undefined
  /** The organization's enabled users, for the assign select (none given: only "Nobody"). */
  users?: ReadonlyArray<AssignableUser> | undefined
  /** The email of whoever acknowledged the incident. */
  acknowledgedBy?: string | undefined
  /**
   * The indicators over every member event (IncidentIndicatorsRepo.forIncident); none given: counted from the events
   * on this page, and the panel says from how many.
   */
  indicators?: IncidentIndicators | undefined
}) => {
  const i = props.incident
  const known = [i.sensor.name]
  const { shown, left } = fitEvents(i.events)
  const notShown = left + Math.max(0, i.eventCount - i.events.length)
  const indicators = props.indicators ?? countIndicators(i.events)
  return (
    <Layout title={`Incident ${i.id}`} viewer={props.viewer} section="incidents">
      <FlashNotice flash={props.flash} />
      <p class="small">
        <a href="/incidents">← Incidents</a>
      </p>
      <h1>
        <SeverityBadge severity={i.severity} /> <ServiceText text={i.title} known={known} />
      </h1>
      {i.baitCredentialUsed && <BaitBanner />}
      <TriageHead
        incident={i}
        triage={canTriage(props.viewer)}
        csrf={props.viewer.csrfToken}
        now={props.now}
        users={props.users ?? []}
        acknowledgedBy={props.acknowledgedBy}
      />
      {i.source.scope === "internal" && i.source.network && <InsideBanner network={i.source.network} ip={i.sourceIp} />}
      <div class="panel">
        <dl class="facts">
          <dt>Source</dt>
          <dd>
            <a href={`/sources/${i.sourceIp}`} class="mono" title="Everything from this address, on every sensor">
              {i.sourceIp}
            </a>
            {i.source.scope === "internal" && i.source.network ? (
              <span class="small"> inside: {i.source.network.label}</span>
            ) : (
              <span class="small muted"> outside your networks</span>
            )}
            {props.viewer.role === "admin" && (
              <>
                {" "}
                <a href={`/settings/ignore?incident=${i.id}#add`} class="small">
                  Ignore activity like this…
                </a>
              </>
            )}
          </dd>
          <SourceFacts source={i.source} />
          <dt>Sensor</dt>
          <dd>
            {i.sensor.name} <span class="muted mono small">{i.sensor.id}</span>
          </dd>
          <dt>Events</dt>
          <dd>
            {i.eventCount} ({i.eventTypes.join(", ")})
          </dd>
          <dt>Confidence</dt>
          <dd>{i.highConfidence ? "High (at least one high-confidence event)" : "Normal"}</dd>
          <dt>First seen</dt>
          <dd>
            <Time at={i.firstSeenAt} now={props.now} />
          </dd>
          <dt>Last seen</dt>
          <dd>
            <Time at={i.lastSeenAt} now={props.now} />
          </dd>
          <dt>Resolved</dt>
          <dd>
            <Time at={i.resolvedAt} now={props.now} />
          </dd>
          <dt>Techniques</dt>
          <dd>
            <Techniques techniques={i.techniques} />
          </dd>
          <dt>Id</dt>
          <dd class="mono">{i.id}</dd>
        </dl>
      </div>
      {i.otherSensors > 0 && <OtherSensorsBanner n={i.otherSensors} ip={i.sourceIp} />}
      <div class="panel">
        <h2>What happened</h2>
        <p>
          <ServiceText text={i.narrative} known={known} />
        </p>
        <h2>Recommended action</h2>
        <p>
          <ServiceText text={i.recommendedAction} known={known} />
        </p>
      </div>
      <IndicatorsPanel indicators={indicators} of={i.eventCount} />
      <h2 id="timeline">Timeline (oldest first)</h2>
      <Timeline events={shown} now={props.now} />
      <EventsLeftOut
        n={notShown}
        link={[props.more ?? `/events?incidentId=${i.id}`, "the Events page"]}
        api={`GET /v1/events?incidentId=${i.id}`}
      />
      <div class="panel">
        <h2>History</h2>
        <IncidentHistory history={props.history ?? []} now={props.now} />
      </div>
      <div class="panel">
        <h2>Notes</h2>
        <IncidentNotes notes={props.notes ?? []} now={props.now} />
        {canTriage(props.viewer) && (
          <form method="post" action={`/incidents/${i.id}/notes`}>
            <Csrf token={props.viewer.csrfToken} />
            <div class="field">
              <label for="note-body">Add a note</label>
              <textarea id="note-body" name="note" class="wide" rows={3} maxLength={2000} required />
            </div>
            <button type="submit" class="secondary">
              Add note
            </button>
          </form>
        )}
      </div>
      {canTriage(props.viewer) && i.status === "open" && (
        <form class="panel" id="close" method="post" action={`/incidents/${i.id}/close`}>
          <h2>Close this incident</h2>
          <Csrf token={props.viewer.csrfToken} />
          <CloseFields idPrefix="close" />
          <button type="submit">Close incident</button>
        </form>
      )}
    </Layout>
  )
}
