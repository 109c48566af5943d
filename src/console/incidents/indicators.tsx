import {
  INDICATOR_TITLES,
  type IncidentIndicators,
  type Indicator,
  type IndicatorGroup,
  indicatorSearchHref,
} from "../../domain/indicators.ts"
import { codePointLength, firstCodePoints } from "../../domain/sanitize.ts"
import { ATTACKER_SHOWN_MAX } from "../components.tsx"

/**
 * The incident page's summary of indicators (domain/indicators.ts): per kind, its most frequent distinct values with
 * their counts and how many more there are. Every value is attacker text, boxed and marked, and a link to the
 * console's own search for every incident where it appeared (the value URL-encoded in the query, never a link to the
 * value itself); a long value shows its start, the rest behind a <details>.
 */

/** A value's start shown in the list; the rest is behind a <details>. */
const INDICATOR_CUT = 120
const ATTACKER_TITLE = "Attacker-supplied text"

/** The value, as a link to every incident where it appeared; when long, its start, and the whole behind a <details>. */
const IndicatorValue = ({ value }: { value: string }) => {
  const length = value.length <= INDICATOR_CUT ? value.length : codePointLength(value)
  const long = length > INDICATOR_CUT
  const over = length > ATTACKER_SHOWN_MAX
  return (
    <>
      <a class="ind-link" href={indicatorSearchHref(value)} title="Every incident where this appeared">
        <code class="atk" title={ATTACKER_TITLE}>
          {long ? `${firstCodePoints(value, INDICATOR_CUT)}…` : value}
        </code>
      </a>
      {long && (
        <details class="long ind-long">
          <summary class="small muted">
            {over
              ? `${length} characters, cut: show the first ${ATTACKER_SHOWN_MAX}`
              : `${length} characters, show all`}
          </summary>
          <code class="atk" title={ATTACKER_TITLE}>
            {over ? firstCodePoints(value, ATTACKER_SHOWN_MAX) : value}
          </code>
          {over && (
            <p class="cut small">
              Cut: {ATTACKER_SHOWN_MAX} of {length} characters shown. The API returns the whole value.
            </p>
          )}
        </details>
      )}
    </>
  )
}

/** One value: its label (which client detail, which hash), the value, a password's length, how many times. */
const IndicatorItem = ({ x }: { x: Indicator }) => (
  <li>
    {x.label !== "" && <span class="ind-label">{x.label}</span>} <IndicatorValue value={x.value} />
    {x.length !== undefined && (
      <span class="muted small">
        {" "}
        fingerprint of a password of {x.length} {x.length === 1 ? "character" : "characters"}
      </span>
    )}{" "}
    <span class="ind-count" title={`Seen ${x.count} ${x.count === 1 ? "time" : "times"}`}>
      ×{x.count}
    </span>
  </li>
)

const IndicatorKind = ({ g }: { g: IndicatorGroup }) => {
  const more = g.distinct - g.shown.length
  return (
    <div class="ind-kind" id={`ind-${g.kind}`}>
      <h3>
        {INDICATOR_TITLES[g.kind]} <span class="muted small">({g.distinct})</span>
      </h3>
      <ul class="ind-list">
        {g.shown.map((x) => (
          <IndicatorItem x={x} />
        ))}
      </ul>
      {more > 0 && (
        <p class="small muted ind-more">
          and {more} more {more === 1 ? "value" : "values"}
        </p>
      )}
    </div>
  )
}

/**
 * The indicators panel. `of` is the incident's event count: when the indicators were read from fewer events (the page's
 * own when no others were given), the panel says so.
 */
export const IndicatorsPanel = ({ indicators, of }: { indicators: IncidentIndicators; of: number }) => (
  <section class="panel ind" id="indicators" aria-labelledby="indicators-title">
    <h2 id="indicators-title">Indicators</h2>
    <p class="small muted">
      {indicators.events >= of
        ? `From all ${of} ${of === 1 ? "event" : "events"} of this incident.`
        : `From the first ${indicators.events} of its ${of} events.`}{" "}
      Each value opens every incident where it appeared.
    </p>
    {indicators.groups.length === 0 ? (
      <p class="muted" id="ind-none">
        No commands, URLs, files, hashes, usernames, passwords or client fingerprints in its events.
      </p>
    ) : (
      <div class="ind-grid">
        {indicators.groups.map((g) => (
          <IndicatorKind g={g} />
        ))}
      </div>
    )}
  </section>
)
