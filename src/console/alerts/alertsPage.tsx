import { MAX_EMAIL_RECIPIENTS } from "../../domain/channels/email.ts"
import {
  type ChannelKindSpec,
  defaultSettleSeconds,
  type HintPart,
  listed,
  MAX_SETTLE_SECONDS,
} from "../../domain/channels/kinds.ts"
import { CHANNEL_KIND_SPECS } from "../../domain/channels/registry.ts"
import { Csrf, type Flash, type Viewer } from "../components.tsx"
import { isAdmin, SettingsLayout } from "../layout.tsx"
import {
  ChannelActions,
  ChannelFacts,
  type ChannelState,
  ChannelStatus,
  ChannelUrl,
  type ChannelView,
  kindLabel,
} from "./channel.tsx"

/** A kind's hint, its code parts as code. */
const Hint = ({ parts }: { parts: ReadonlyArray<HintPart> }) => (
  <>{parts.map((part) => (typeof part === "string" ? part : <code>{part.code}</code>))}</>
)

/** The kinds' short names, "A and B", for those that `pick` picks. */
const kindsWhere = (pick: (spec: ChannelKindSpec) => boolean) =>
  listed(CHANNEL_KIND_SPECS.filter(pick).map((spec) => spec.shortLabel))

/** What the form says is stored sealed: "Slack and Teams URLs and HEC tokens". */
const sealedCredentials = listed([
  ...(CHANNEL_KIND_SPECS.some((spec) => spec.credential.type === "sealedUrl")
    ? [`${kindsWhere((spec) => spec.credential.type === "sealedUrl")} URLs`]
    : []),
  ...CHANNEL_KIND_SPECS.flatMap((spec) =>
    spec.credential.type === "sealedToken" ? [`${spec.credential.label}s`] : [],
  ),
])

/** The settle field's hint, from the kinds' descriptors: who settles, by how much by default, who never does. */
const settleHint = (() => {
  const people = CHANNEL_KIND_SPECS.filter((spec) => spec.settle.readers === "people")
  const defaults = listed([...new Set(people.map((spec) => `${defaultSettleSeconds(spec.settle)}`))])
  return (
    `${listed(people.map((spec) => spec.shortLabel))}: an incident's first message waits this many seconds, so that ` +
    `the changes within them make one message with the final state; later changes are new messages at once. Empty: ` +
    `${defaults} s; 0: off; at most ${MAX_SETTLE_SECONDS}. ${kindsWhere((spec) => spec.settle.readers === "machines")} ` +
    "channels get every transition."
  )
})()

/** The token field: a label and the kinds that take it ("HEC token (Splunk HEC only)"). */
const tokenFieldLabel = listed(
  CHANNEL_KIND_SPECS.flatMap((spec) =>
    spec.credential.type === "sealedToken" ? [`${spec.credential.label} (${spec.label} only)`] : [],
  ),
)

/** One form for every kind and format (no script): each field says which kinds use it; the service checks the rest. */
const AddChannelForm = ({ viewer }: { viewer: Viewer }) => (
  <form class="panel" method="post" action="/settings/alerts/channels">
    <Csrf token={viewer.csrfToken} />
    <div class="field">
      <label for="channel-kind">Kind</label>
      <select id="channel-kind" name="kind">
        {CHANNEL_KIND_SPECS.map((spec) => (
          <option value={spec.name}>{spec.label}</option>
        ))}
      </select>
    </div>
    <div class="field">
      <label for="channel-url">URL or destination (all but email)</label>
      <input
        id="channel-url"
        name="url"
        type="url"
        autocomplete="off"
        placeholder="https://soar.example.com/hooks/decoy"
        aria-describedby="channel-url-hint"
      />
      <ul id="channel-url-hint" class="small muted">
        {CHANNEL_KIND_SPECS.map((spec) => (
          <li>
            <Hint parts={spec.address.hint} />
          </li>
        ))}
      </ul>
      <p class="small muted">
        {sealedCredentials} are stored sealed and never shown again. Every address must resolve to public addresses
        only.
      </p>
    </div>
    <div class="field">
      <label for="channel-recipients">Recipients (Email only)</label>
      <textarea
        id="channel-recipients"
        name="recipients"
        rows={2}
        maxLength={6000}
        autocomplete="off"
        aria-describedby="channel-recipients-hint"
      />
      <p id="channel-recipients-hint" class="small muted">
        Up to {MAX_EMAIL_RECIPIENTS} addresses, separated by commas, spaces or lines. Each is mailed a confirmation link
        and gets alerts only once they have confirmed.
      </p>
    </div>
    <div class="field">
      <label for="channel-token">{tokenFieldLabel}</label>
      <input id="channel-token" name="token" type="password" autocomplete="off" maxLength={256} />
    </div>
    <div class="field">
      <label for="channel-format">Format ({kindsWhere((spec) => spec.formats.includes("ocsf"))})</label>
      <select id="channel-format" name="format" aria-describedby="channel-format-hint">
        <option value="native">Native</option>
        <option value="ocsf">OCSF Detection Finding</option>
      </select>
      <p id="channel-format-hint" class="small muted">
        {kindsWhere((spec) => !spec.formats.includes("ocsf"))} always get a message for people. An OCSF channel carries
        incidents only, not sensor-health alerts.
      </p>
    </div>
    <div class="field">
      <label for="channel-min">Minimum severity</label>
      <select id="channel-min" name="minSeverity">
        {["low", "medium", "high", "critical"].map((s) => (
          <option value={s}>{s}</option>
        ))}
      </select>
    </div>
    <div class="field">
      <label for="channel-settle">
        Settle window in seconds ({kindsWhere((spec) => spec.settle.readers === "people")})
      </label>
      <input
        id="channel-settle"
        name="settle"
        type="number"
        min={0}
        max={MAX_SETTLE_SECONDS}
        step={1}
        aria-describedby="channel-settle-hint"
      />
      <p id="channel-settle-hint" class="small muted">
        {settleHint}
      </p>
    </div>
    <div class="field">
      <label for="channel-sensor-health" class="inline-label">
        <input id="channel-sensor-health" type="checkbox" name="sensorHealth" value="on" /> Also sensor-health alerts:{" "}
        <code>sensor.silent</code>, <code>sensor.recovered</code> (native format only)
      </label>
    </div>
    <button type="submit">Add channel</button>
  </form>
)

/** What a channel's state is when the list has none for it (a channel added while the page was read). */
const UNUSED: ChannelState = { last: null, failures: 0 }

/**
 * Settings → Alerts: the channels first, each with its latest delivery and its failures of the last 24 hours, then
 * (admins) the Add a channel form behind its button, a <details> closed unless there is no channel yet or the last
 * add was refused (`addOpen`), so it works without a script.
 */
export const AlertsPage = (props: {
  viewer: Viewer
  channels: ReadonlyArray<ChannelView>
  /** Each channel's latest delivery and recent failures (absent, or a channel missing: never used). */
  states?: ReadonlyMap<string, ChannelState>
  /** The add form opens (after a refused add); it is open anyway while there is no channel. */
  addOpen?: boolean
  flash: Flash | undefined
  now: Date
}) => {
  const failing = props.channels.filter((c) => (props.states?.get(c.id)?.failures ?? 0) > 0).length
  return (
    <SettingsLayout viewer={props.viewer} tab="alerts" title="Alerts" flash={props.flash}>
      <h2 class="alerts-heading">Channels</h2>
      <p class="alerts-summary">
        {props.channels.length === 0
          ? "No channels yet: nothing is sent anywhere."
          : `${props.channels.length} ${props.channels.length === 1 ? "channel" : "channels"}; ${
              failing === 0 ? "none" : failing
            } with failed attempts in the last 24 h.`}
      </p>
      {props.channels.map((c) => (
        <section class="panel channel" id={`channel-${c.id}`} aria-labelledby={`channel-title-${c.id}`}>
          <h3 class="alerts-title" id={`channel-title-${c.id}`}>
            {kindLabel(c.kind)} <ChannelUrl viewer={props.viewer} url={c.url} kind={c.kind} />
            {!c.enabled && <span class="alerts-disabled"> (disabled)</span>}
          </h3>
          <ChannelStatus state={props.states?.get(c.id) ?? UNUSED} now={props.now} />
          <p>
            <a href={`/settings/alerts/channels/${c.id}`}>Delivery log</a>
          </p>
          <ChannelFacts viewer={props.viewer} c={c} now={props.now} />
          {isAdmin(props.viewer) && <ChannelActions viewer={props.viewer} c={c} />}
        </section>
      ))}
      {isAdmin(props.viewer) && (
        <details class="alerts-add" id="add" open={props.addOpen === true || props.channels.length === 0}>
          <summary class="button">Add a channel…</summary>
          <AddChannelForm viewer={props.viewer} />
        </details>
      )}
      <h2>What channels receive</h2>
      <p>
        Channels receive <code>incident.created</code>, <code>incident.escalated</code> and{" "}
        <code>incident.reopened</code>: a webhook signed with the channel's secret, a Slack or Microsoft Teams message,
        syslog over TLS, a Splunk HEC event, or an email to the recipients who confirmed their address. A channel that
        opts in to sensor-health alerts also receives <code>sensor.silent</code> and <code>sensor.recovered</code> when
        a sensor misses three heartbeats and when it is heard from again. A channel in the OCSF format also receives{" "}
        <code>incident.closed</code> (the finding's Close activity). Channels read by people (
        {kindsWhere((spec) => spec.settle.readers === "people")}) wait their settle window after an incident's first
        message, so that changes within seconds make one message with the final state; the others get every transition
        at once.
      </p>
    </SettingsLayout>
  )
}
