import type { Child } from "hono/jsx"
import type { IncidentSummary } from "../domain/models.ts"
import { codePointLength, firstCodePoints } from "../domain/sanitize.ts"
import { splitServiceText } from "../domain/serviceText.ts"
import type { Role } from "../repos/ConsoleUsersRepo.ts"

/**
 * The pieces every page is built from. Hono's JSX escapes every string it renders (text and attributes), and no
 * page uses its escape hatches (`raw`, `html`, `dangerouslySetInnerHTML`), so attacker text never becomes markup;
 * test/console/render.test.ts checks both.
 */

export type { Role }

export interface Viewer {
  readonly email: string
  readonly role: Role
  readonly csrfToken: string
}

export const Csrf = ({ token }: { token: string }) => <input type="hidden" name="csrf" value={token} />

/** A column header: its label, or its label and a class (`hide-sm`: not shown on a phone). */
export type Column = string | { readonly label: string; readonly class: string }

/**
 * The console's one table: column headers (`scope="col"`), then a row per item, or one muted cell across every
 * column when there are none (`empty`; left out where the list can never be empty). Scrolls sideways in its wrap.
 */
export const DataTable = <T,>(props: {
  columns: ReadonlyArray<Column>
  empty?: string | undefined
  rows: ReadonlyArray<T>
  children: (row: T) => Child
  /** On a phone, each row as a card of "label value" lines (its cells carry `data-label`), not a wide table. */
  stacked?: boolean
}) => (
  <div class="table-wrap">
    <table class={props.stacked === true ? "stacked" : undefined}>
      <thead>
        <tr>
          {props.columns.map((column) =>
            typeof column === "string" ? (
              <th scope="col">{column}</th>
            ) : (
              <th scope="col" class={column.class}>
                {column.label}
              </th>
            ),
          )}
        </tr>
      </thead>
      <tbody>
        {props.rows.length === 0 && props.empty !== undefined && (
          <tr>
            <td colSpan={props.columns.length} class="muted">
              {props.empty}
            </td>
          </tr>
        )}
        {props.rows.map((row) => props.children(row))}
      </tbody>
    </table>
  </div>
)

/**
 * A list filter: a labelled select named as its id, "Any" first (no filter), then each option (a value shown as
 * itself, or a value and its label), the current one selected.
 */
export const FilterSelect = (props: {
  id: string
  label: string
  options: ReadonlyArray<string | readonly [value: string, label: string]>
  selected: string | undefined
}) => (
  <div>
    <label for={props.id}>{props.label}</label>
    <select id={props.id} name={props.id}>
      <option value="">Any</option>
      {props.options.map((option) => {
        const [value, label] = typeof option === "string" ? [option, option] : option
        return (
          <option value={value} selected={props.selected === value}>
            {label}
          </option>
        )
      })}
    </select>
  </div>
)

export const SeverityBadge = ({ severity }: { severity: string }) => (
  <span class={`sev sev-${severity}`}>{severity}</span>
)

export const StatusBadge = ({ status }: { status: string }) => <span class={`status status-${status}`}>{status}</span>

const UNITS: ReadonlyArray<readonly [number, string]> = [
  [86_400_000, "d"],
  [3_600_000, "h"],
  [60_000, "min"],
  [1000, "s"],
]
export const relative = (at: Date, now: Date = new Date()): string => {
  const ms = now.getTime() - at.getTime()
  const abs = Math.abs(ms)
  if (abs < 5000) return "just now"
  const [unit, name] = UNITS.find(([u]) => abs >= u) ?? [1000, "s"]
  const n = Math.floor(abs / unit)
  return ms >= 0 ? `${n} ${name} ago` : `in ${n} ${name}`
}

/** Relative time, with the absolute UTC time beside it (machine-readable in `datetime`). */
export const Time = ({ at, now }: { at: Date | string | null; now?: Date }) => {
  if (at === null) return <span class="muted">—</span>
  const date = typeof at === "string" ? new Date(at) : at
  const iso = date.toISOString()
  return (
    <time datetime={iso} title={iso}>
      {relative(date, now)} <span class="muted small">({iso.replace("T", " ").slice(0, 19)} UTC)</span>
    </time>
  )
}

/** Longer attacker text is cut, with a <details> to read the rest, so no value can flood a page. */
export const ATTACKER_CUT = 160
/**
 * At most this many code points of one attacker value are rendered, even opened: a value can be as large as an
 * ingest request (1 MiB), and a page of such values ran to tens of megabytes. Past it the value is marked as cut,
 * with its full length; the API has it whole.
 */
export const ATTACKER_SHOWN_MAX = 2000

/** An attacker value as the text shown: a string as itself, anything else as its compact JSON. */
export const attackerText = (value: unknown): string =>
  typeof value === "string" ? value : (JSON.stringify(value) ?? String(value))

/** At most how many UTF-16 units of `text` an <Attacker> renders: the preview, then the opened part. */
export const attackerCost = (text: string, cut: number = ATTACKER_CUT): number =>
  text.length <= cut ? text.length : cut + Math.min(text.length, ATTACKER_SHOWN_MAX * 2)

const ATTACKER_TITLE = "Attacker-supplied text"

/**
 * An empty attacker value: its box, holding the interface's own "(empty)" in muted italics, not an empty box too
 * small to see. The marker is not attacker text; a value that is the text "(empty)" shows in the box's own type.
 */
const AttackerEmpty = () => (
  <code class="atk atk-empty" title={`${ATTACKER_TITLE}: empty`}>
    <em class="muted">(empty)</em>
  </code>
)

/**
 * Attacker-supplied text: shown as text, monospace, marked as such so a reader never takes it for the console's own words. Longer than `cut` code points: a preview,
 * the rest behind a <details>; longer than ATTACKER_SHOWN_MAX: cut there too, with a visible mark and the full length.
 */
export const Attacker = ({ value, cut = ATTACKER_CUT }: { value: unknown; cut?: number }) => {
  const text = attackerText(value)
  if (text === "") return <AttackerEmpty />
  const length = text.length <= cut ? text.length : codePointLength(text)
  if (length <= cut) {
    return (
      <code class="atk" title={ATTACKER_TITLE}>
        {text}
      </code>
    )
  }
  const over = length > ATTACKER_SHOWN_MAX
  return (
    <details class="long">
      <summary>
        <code class="atk" title={ATTACKER_TITLE}>
          {`${firstCodePoints(text, cut)}…`}
        </code>{" "}
        <span class="muted small">
          {over
            ? `(${length} characters, cut: show the first ${ATTACKER_SHOWN_MAX})`
            : `(${length} characters, show all)`}
        </span>
      </summary>
      <code class="atk" title={ATTACKER_TITLE}>
        {over ? firstCodePoints(text, ATTACKER_SHOWN_MAX) : text}
      </code>
      {over && (
        <p class="cut small">
          Cut: {ATTACKER_SHOWN_MAX} of {length} characters shown. The API returns the whole value.
        </p>
      )}
    </details>
  )
}

/** One piece of a service-written text: its own words, or a quoted value. */
/**
 * A service-written text with every value it quotes marked as attacker text, the same mark as attacker-input
 * values. `known` values (the incident's sensor name, which an admin chose) are shown as plain quoted text instead.
 */
export const ServiceText = ({ text, known = [] }: { text: string; known?: ReadonlyArray<string> }) => (
  <>
    {splitServiceText(text).map((part) =>
      !part.quoted ? (
        part.text
      ) : known.includes(part.text) ? (
        `"${part.text}"`
      ) : part.text === "" ? (
        <AttackerEmpty />
      ) : (
        <code class="atk" title={ATTACKER_TITLE}>
          {part.text}
        </code>
      ),
    )}
  </>
)

export interface Flash {
  readonly kind: "ok" | "error"
  readonly text: string
  /** A secret shown once (a new API key, a signing secret), with what it is. */
  readonly secret?: { readonly label: string; readonly value: string } | undefined
}

export const FlashNotice = ({ flash }: { flash: Flash | undefined }) =>
  flash ? (
    <div class={`notice notice-${flash.kind}`} role={flash.kind === "error" ? "alert" : "status"}>
      <p>{flash.text}</p>
      {flash.secret && (
        <>
          <p>
            <strong>{flash.secret.label}</strong> It is shown only now: store it in your secret manager.
          </p>
          <code class="secret" id="secret-value">
            {flash.secret.value}
          </code>
          <button type="button" class="secondary" data-copy="secret-value">
            Copy
          </button>
        </>
      )}
    </div>
  ) : null

export const Techniques = ({ techniques }: { techniques: ReadonlyArray<{ id: string; name: string }> }) =>
  techniques.length === 0 ? (
    <span class="muted">—</span>
  ) : (
    <span>
      {techniques.map((t, i) => (
        <>
          {i > 0 && ", "}
          <a href={`https://attack.mitre.org/techniques/${t.id.replace(".", "/")}/`} rel="noreferrer noopener">
            {t.id}
          </a>{" "}
          {t.name}
        </>
      ))}
    </span>
  )

/**
 * What matters most about an incident, as small marks beside its title in a list: a bait credential used, a source
 * inside the organization's networks.
 */
export const IncidentMarkers = ({ incident }: { incident: IncidentSummary }) => (
  <>
    {incident.baitCredentialUsed && (
      <>
        {" "}
        <span class="marker marker-bait" title="A bait credential was used">
          bait
        </span>
      </>
    )}
    {incident.source.scope === "internal" && (
      <>
        {" "}
        <span
          class="marker marker-inside"
          title={`From inside your network${incident.source.network ? ` (${incident.source.network.label})` : ""}`}
        >
          inside
        </span>
      </>
    )}
  </>
)
