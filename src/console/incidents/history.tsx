import { SeverityBadge, Time } from "../components.tsx"

/**
 * Triage on an incident's page: its history (created, escalated, closed, re-opened, acknowledged, assigned), its
 * notes, the close.
 */

/** The words of each close reason. */
export const CLOSE_REASON_LABELS: Readonly<Record<string, string>> = {
  resolved: "Resolved",
  false_positive: "False positive",
  authorized_test: "Authorized test",
  other: "Other",
}

/** A close's reason (required) and note (optional). */
export const CloseFields = ({ idPrefix }: { idPrefix: string }) => (
  <>
    <div class="field">
      <label for={`${idPrefix}-reason`}>Reason</label>
      <select id={`${idPrefix}-reason`} name="reason" required>
        <option value="">Choose a reason</option>
        {Object.entries(CLOSE_REASON_LABELS).map(([value, label]) => (
          <option value={value}>{label}</option>
        ))}
      </select>
    </div>
    <div class="field">
      <label for={`${idPrefix}-note`}>Note (optional)</label>
      <textarea id={`${idPrefix}-note`} name="note" class="wide" rows={2} maxLength={2000} />
    </div>
  </>
)

/** A state change as the incident's history shows it (TransitionsRepo.history). */
export interface TransitionEntry {
  readonly id: string
  readonly kind: "created" | "escalated" | "reopened" | "closed"
  readonly fromSeverity: string | null
  readonly toSeverity: string
  readonly at: Date
  readonly closeReason: string | null
  readonly closeNote: string | null
  readonly actor: string | null
  readonly actorEmail: string | null
}

/** An acknowledgement or (un)assignment as the incident's history shows it (IncidentsRepo.triageHistory). */
export interface TriageEntry {
  readonly id: string
  readonly kind: "acknowledged" | "assigned" | "unassigned"
  readonly at: Date
  /** A console user's id, or `cli`. */
  readonly actor: string
  readonly actorEmail: string | null
  readonly assigneeEmail: string | null
}

/** One line of the history: a state change, or triage by a person. */
export type HistoryEntry = TransitionEntry | TriageEntry

/** The transitions and the triage of an incident as one history, in time order (ties: transitions first, then id). */
export const mergeHistory = (
  transitions: ReadonlyArray<TransitionEntry>,
  triage: ReadonlyArray<TriageEntry>,
): ReadonlyArray<HistoryEntry> =>
  [...transitions.map((t) => [0, t] as const), ...triage.map((t) => [1, t] as const)]
    .sort(([ka, a], [kb, b]) => a.at.getTime() - b.at.getTime() || ka - kb || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map(([, e]) => e)

/** A note on an incident (IncidentNotesRepo.forIncident). */
export interface NoteEntry {
  readonly id: string
  readonly author: string
  readonly authorEmail: string | null
  readonly body: string
  readonly createdAt: Date
}

/** Who did it: a console user (by email), the operator at the CLI; null is the service itself. */
const actorText = (actor: string | null, email: string | null, service: string) =>
  actor === null ? service : actor === "cli" ? "the operator (CLI)" : (email ?? actor)

/**
 * Text a user wrote (a note): escaped like everything the console renders, as text; never markup and never a link,
 * whatever it looks like.
 */
export const UserText = ({ text }: { text: string }) => <span class="user-text">{text}</span>

const HistoryLine = ({ t }: { t: HistoryEntry }) => {
  switch (t.kind) {
    case "created":
      return (
        <>
          <strong>Created</strong> at severity <SeverityBadge severity={t.toSeverity} />
        </>
      )
    case "escalated":
      return (
        <>
          <strong>Escalated</strong> from <SeverityBadge severity={t.fromSeverity ?? "low"} /> to{" "}
          <SeverityBadge severity={t.toSeverity} />
        </>
      )
    case "reopened":
      return (
        <>
          <strong>Re-opened</strong> by new activity
        </>
      )
    case "closed":
      return (
        <>
          <strong>Closed</strong>
          {t.closeReason !== null ? (
            <> ({CLOSE_REASON_LABELS[t.closeReason] ?? t.closeReason})</>
          ) : (
            t.actor !== null && <span class="muted"> (no reason recorded)</span>
          )}{" "}
          by {actorText(t.actor, t.actorEmail, "the idle-close sweep, after a quiet period")}
          {t.closeNote !== null && (
            <div class="note-body">
              <span class="muted small">Note: </span>
              <UserText text={t.closeNote} />
            </div>
          )}
        </>
      )
    case "acknowledged":
      return (
        <>
          <strong>Acknowledged</strong> by {actorText(t.actor, t.actorEmail, "the service")}
        </>
      )
    case "assigned":
      return (
        <>
          <strong>Assigned</strong> to {t.assigneeEmail ?? "a user"} by{" "}
          {actorText(t.actor, t.actorEmail, "the service")}
        </>
      )
    case "unassigned":
      return (
        <>
          <strong>Unassigned</strong> by {actorText(t.actor, t.actorEmail, "the service")}
        </>
      )
  }
}

/**
 * The incident's history, oldest first: created, escalated, closed (why, by whom), re-opened, acknowledged, assigned
 * and unassigned (to whom, by whom), with times.
 */
export const IncidentHistory = ({ history, now }: { history: ReadonlyArray<HistoryEntry>; now: Date }) =>
  history.length === 0 ? (
    <p class="muted">No recorded changes.</p>
  ) : (
    <ol class="timeline history">
      {history.map((t) => (
        <li id={t.id}>
          <Time at={t.at} now={now} /> — <HistoryLine t={t} />
        </li>
      ))}
    </ol>
  )

/** The incident's notes, oldest first, each with its author and time. */
export const IncidentNotes = ({ notes, now }: { notes: ReadonlyArray<NoteEntry>; now: Date }) =>
  notes.length === 0 ? (
    <p class="muted">No notes yet.</p>
  ) : (
    <ol class="timeline notes">
      {notes.map((n) => (
        <li id={n.id}>
          <div class="small">
            <strong>{actorText(n.author, n.authorEmail, "the service")}</strong> · <Time at={n.createdAt} now={now} />
          </div>
          <div class="note-body">
            <UserText text={n.body} />
          </div>
        </li>
      ))}
    </ol>
  )
