import { Csrf, type Flash, type Viewer } from "../components.tsx"
import { isAdmin, SettingsLayout } from "../layout.tsx"

/** How long this organization's events are kept; an admin may set its own number of days. */
export const RetentionPage = (props: {
  viewer: Viewer
  flash: Flash | undefined
  /** The organization's own setting; null: the service's RETENTION_DAYS. */
  days: number | null
  defaultDays: number
  feedDays: number
}) => (
  <SettingsLayout viewer={props.viewer} tab="retention" title="Retention" flash={props.flash}>
    <p>
      Events are kept for <strong>{props.days ?? props.defaultDays} days</strong>
      {props.days === null
        ? " (the service's default)"
        : ` (this organization's setting; the default is ${props.defaultDays})`}{" "}
      after they were stored, then deleted, with the incidents left without events. The API's change feeds keep{" "}
      {props.feedDays} days of incident changes; a feed client away longer starts again with <code>from</code>.
    </p>
    {isAdmin(props.viewer) && (
      <form class="panel" method="post" action="/settings/retention">
        <h2>Keep events for</h2>
        <Csrf token={props.viewer.csrfToken} />
        <div class="field">
          <label for="retention-days">Days (blank for the default, {props.defaultDays})</label>
          <input
            id="retention-days"
            name="days"
            type="number"
            min={1}
            max={100000}
            step={1}
            value={props.days === null ? "" : String(props.days)}
          />
        </div>
        <button type="submit">Save</button>
      </form>
    )}
  </SettingsLayout>
)
