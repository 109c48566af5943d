import type { IgnoreRuleView } from "../../admin/IgnoreAdmin.ts"
import { Csrf, DataTable, type Flash, Time, type Viewer } from "../components.tsx"
import { isAdmin, SettingsLayout } from "../layout.tsx"

/** What the add form shows: empty, pre-filled from an incident, or what was sent (on the confirmation page). */
export interface IgnoreForm {
  readonly source: string
  readonly sensor: string
  readonly port: string
  readonly type: string
  readonly note: string
  readonly expires: string
  /** The incident the form came from ("Ignore activity like this"), and how to close it with the rule. */
  readonly incidentId: string
  readonly closeAs: string
}

export const EMPTY_IGNORE_FORM: IgnoreForm = {
  source: "",
  sensor: "",
  port: "",
  type: "",
  note: "",
  expires: "",
  incidentId: "",
  closeAs: "",
}

/** The close choices offered with a rule made from an incident. */
export const CLOSE_WITH_RULE: ReadonlyArray<readonly [string, string]> = [
  ["", "Leave the incident as it is"],
  ["authorized_test", "Close it: authorized test"],
  ["false_positive", "Close it: false positive"],
]

const Any = () => <span class="muted">any</span>

/** What a rule matches, in words (the same on the list and the confirmation). */
const Matches = (props: {
  source: string
  sensor: string | null
  sensorName?: string | undefined
  port: number | null
  type: string | null
}) => (
  <>
    <span class="mono">{props.source}</span>
    {props.sensor !== null && (
      <div class="small">
        sensor {props.sensorName ?? ""} <span class="mono muted">{props.sensor}</span>
      </div>
    )}
    {props.port !== null && <div class="small">port {props.port}</div>}
    {props.type !== null && <div class="small mono">{props.type}</div>}
  </>
)

const Field = (props: {
  id: string
  name: keyof IgnoreForm
  label: string
  value: string
  placeholder?: string
  required?: boolean
  list?: string
}) => (
  <div class="field">
    <label for={props.id}>{props.label}</label>
    <input
      id={props.id}
      name={props.name}
      type="text"
      class={props.name === "note" ? "wide" : undefined}
      value={props.value}
      placeholder={props.placeholder}
      required={props.required}
      list={props.list}
      maxLength={props.name === "note" ? 500 : 200}
    />
  </div>
)

/** The fields of a rule, as the add form and the confirmation (hidden) carry them. */
const Hidden = ({ form }: { form: IgnoreForm }) => (
  <>
    {(Object.keys(form) as Array<keyof IgnoreForm>).map((name) => (
      <input type="hidden" name={name} value={form[name]} />
    ))}
  </>
)

/**
 * Settings → Ignore rules: the organization's rules with their hits, last hit, expiry, note and creator;
 * administrators add (through a confirmation) and remove them, analysts read. Notes are user text: rendered as text.
 */
export const IgnoreRulesPage = (props: {
  viewer: Viewer
  rules: ReadonlyArray<IgnoreRuleView>
  creators: Readonly<Record<string, string>>
  sensors: ReadonlyArray<{ readonly id: string; readonly name: string }>
  types: ReadonlyArray<string>
  form: IgnoreForm
  flash: Flash | undefined
  now: Date
}) => {
  const sensorName = new Map(props.sensors.map((s) => [s.id, s.name]))
  return (
    <SettingsLayout viewer={props.viewer} tab="ignore" title="Ignore rules" flash={props.flash}>
      <p>
        An event that matches a rule when it arrives is kept, marked with the rule, but opens or changes no incident,
        sends no webhook and is not returned by the API, its feeds or MCP. A rule changes nothing already stored. The
        Events page lists ignored events under <a href="/events/ignored">Show ignored events</a>.
      </p>
      {isAdmin(props.viewer) && (
        <form class="panel" method="post" action="/settings/ignore" id="add">
          <h2>Add a rule</h2>
          <Csrf token={props.viewer.csrfToken} />
          {props.form.incidentId !== "" && (
            <p class="small">
              From incident <a href={`/incidents/${props.form.incidentId}`}>{props.form.incidentId}</a>: its source and
              sensor are filled in.
            </p>
          )}
          <Field
            id="ignore-source"
            name="source"
            label="Source address or network (IPv4 or IPv6)"
            value={props.form.source}
            placeholder="192.0.2.0/24"
            required
          />
          <div class="field">
            <label for="ignore-sensor">Sensor (optional)</label>
            <select id="ignore-sensor" name="sensor">
              <option value="">Any sensor</option>
              {props.sensors.map((s) => (
                <option value={s.id} selected={s.id === props.form.sensor}>
                  {s.name}
                </option>
              ))}
            </select>
          </div>
          <Field id="ignore-port" name="port" label="Decoy port (optional)" value={props.form.port} placeholder="22" />
          <div class="field">
            <label for="ignore-type">Event type (optional)</label>
            <select id="ignore-type" name="type">
              <option value="">Any type</option>
              {props.types.map((t) => (
                <option value={t} selected={t === props.form.type}>
                  {t}
                </option>
              ))}
            </select>
          </div>
          <Field
            id="ignore-note"
            name="note"
            label="Note (why this activity is harmless)"
            value={props.form.note}
            placeholder="Our weekly vulnerability scan"
          />
          <Field
            id="ignore-expires"
            name="expires"
            label="Expires (optional: 12h, 7d, or a time such as 2026-12-31T00:00:00Z)"
            value={props.form.expires}
          />
          {props.form.incidentId !== "" && (
            <>
              <input type="hidden" name="incidentId" value={props.form.incidentId} />
              <div class="field">
                <label for="ignore-close">The incident</label>
                <select id="ignore-close" name="closeAs">
                  {CLOSE_WITH_RULE.map(([value, label]) => (
                    <option value={value} selected={value === props.form.closeAs}>
                      {label}
                    </option>
                  ))}
                </select>
              </div>
            </>
          )}
          <button type="submit">Review the rule…</button>
        </form>
      )}
      <h2>Rules</h2>
      <DataTable
        columns={["Matches", "Note", "Hits", "Last hit", "Expires", "Created", ""]}
        empty="No ignore rules."
        rows={props.rules}
      >
        {(r) => (
          <tr id={r.id}>
            <td>
              <Matches
                source={r.source}
                sensor={r.sensorId}
                sensorName={r.sensorId === null ? undefined : sensorName.get(r.sensorId)}
                port={r.port}
                type={r.eventType}
              />
              <div class="mono small muted">{r.id}</div>
              {r.sameAs.length > 0 && <div class="small">Matches the same events as {r.sameAs.join(", ")}.</div>}
            </td>
            <td class="user-text">{r.note === "" ? <span class="muted">—</span> : r.note}</td>
            <td>{r.hitCount}</td>
            <td>{r.lastHitAt ? <Time at={r.lastHitAt} now={props.now} /> : <span class="muted">never</span>}</td>
            <td>
              {r.expiresAt ? <Time at={r.expiresAt} now={props.now} /> : <span class="muted">never</span>}
              {r.expired && <div class="status">expired</div>}
            </td>
            <td>
              <Time at={r.createdAt} now={props.now} />
              <div class="small">
                {r.createdBy === "cli" ? "the operator (CLI)" : (props.creators[r.createdBy] ?? r.createdBy)}
              </div>
            </td>
            <td>
              {isAdmin(props.viewer) && (
                <form class="inline" method="post" action={`/settings/ignore/${r.id}/remove`}>
                  <Csrf token={props.viewer.csrfToken} />
                  <button type="submit" class="secondary" aria-label={`Remove rule ${r.id}`}>
                    Remove
                  </button>
                </form>
              )}
            </td>
          </tr>
        )}
      </DataTable>
    </SettingsLayout>
  )
}

/** The rule as it will be stored, to confirm (or go back and change). */
export const ConfirmIgnorePage = (props: {
  viewer: Viewer
  form: IgnoreForm
  rule: {
    source: string
    sensorId: string | null
    port: number | null
    eventType: string | null
    note: string
    expiresAt: Date | null
  }
  sensorName: string | undefined
  now: Date
}) => (
  <SettingsLayout viewer={props.viewer} tab="ignore" title="Add this ignore rule?" flash={undefined}>
    <div class="panel">
      <dl class="facts">
        <dt>Matches</dt>
        <dd>
          <Matches
            source={props.rule.source}
            sensor={props.rule.sensorId}
            sensorName={props.sensorName}
            port={props.rule.port}
            type={props.rule.eventType}
          />
          {props.rule.sensorId === null && (
            <div class="small">
              on <Any /> sensor
            </div>
          )}
        </dd>
        <dt>Note</dt>
        <dd class="user-text">{props.rule.note === "" ? <span class="muted">—</span> : props.rule.note}</dd>
        <dt>Expires</dt>
        <dd>{props.rule.expiresAt ? <Time at={props.rule.expiresAt} now={props.now} /> : "never"}</dd>
        {props.form.incidentId !== "" && (
          <>
            <dt>Incident</dt>
            <dd>
              <a href={`/incidents/${props.form.incidentId}`}>{props.form.incidentId}</a>:{" "}
              {CLOSE_WITH_RULE.find(([value]) => value === props.form.closeAs)?.[1] ?? "Leave the incident as it is"}
            </dd>
          </>
        )}
      </dl>
      <p>
        From now on, matching events are kept but open no incident, send no webhook and are not returned by the API.
        Events already stored and existing incidents do not change.
      </p>
      <form method="post" action="/settings/ignore">
        <Csrf token={props.viewer.csrfToken} />
        <Hidden form={props.form} />
        <input type="hidden" name="confirmed" value="yes" />
        <button type="submit">Add the rule</button> <a href="/settings/ignore">Cancel</a>
      </form>
    </div>
  </SettingsLayout>
)
