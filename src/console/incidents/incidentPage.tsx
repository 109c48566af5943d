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
import { EventsLeftOut, EventTable, fitEvents } from "../eventTable.tsx"
import { Layout } from "../layout.tsx"
import { InsideBanner, SourceFacts } from "../sources/sourceFacts.tsx"
import { CloseFields, type HistoryEntry, IncidentHistory, IncidentNotes, type NoteEntry } from "./history.tsx"

/** An incident's page, the `url` target of the API and of alerts: everything the API shows, the timeline, Close. */
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

export const IncidentPage = (props: {
  viewer: Viewer
  incident: Incident
  more: string | undefined
  now: Date
  flash: Flash | undefined
  /** The recorded transitions and the notes, oldest first (none given: none shown). */
  history?: ReadonlyArray<HistoryEntry> | undefined
  notes?: ReadonlyArray<NoteEntry> | undefined
}) => {
  const i = props.incident
  const known = [i.sensor.name]
  const { shown, left } = fitEvents(i.events)
  const notShown = left + Math.max(0, i.eventCount - i.events.length)
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
      {i.source.scope === "internal" && i.source.network && <InsideBanner network={i.source.network} ip={i.sourceIp} />}
      {i.otherSensors > 0 && <OtherSensorsBanner n={i.otherSensors} ip={i.sourceIp} />}
      <div class="panel">
        <dl class="facts">
          <dt>Id</dt>
          <dd class="mono">{i.id}</dd>
          <dt>Status</dt>
          <dd>
            <StatusBadge status={i.status} />
            {i.status === "open" && (
              <>
                {" "}
                <a href="#close" class="small">
                  Close…
                </a>
              </>
            )}
          </dd>
          <dt>Source</dt>
          <dd>
            <a href={`/sources/${i.sourceIp}`} class="mono" title="Everything from this address, on every sensor">
              {i.sourceIp}
            </a>
            {i.source.scope === "internal" && i.source.network ? (
              <span class="small"> inside: {i.source.network.label}</span>
            ) : null}
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
        </dl>
      </div>
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
      <div class="panel">
        <h2>History</h2>
        <IncidentHistory history={props.history ?? []} now={props.now} />
      </div>
      <div class="panel">
        <h2>Notes</h2>
        <IncidentNotes notes={props.notes ?? []} now={props.now} />
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
      </div>
      {i.status === "open" && (
        <form class="panel" id="close" method="post" action={`/incidents/${i.id}/close`}>
          <h2>Close this incident</h2>
          <Csrf token={props.viewer.csrfToken} />
          <CloseFields idPrefix="close" />
          <button type="submit">Close incident</button>
        </form>
      )}
      <h2>Timeline (oldest first)</h2>
      <EventTable events={shown} now={props.now} />
      <EventsLeftOut
        n={notShown}
        link={[props.more ?? `/events?incidentId=${i.id}`, "the Events page"]}
        api={`GET /v1/events?incidentId=${i.id}`}
      />
    </Layout>
  )
}
