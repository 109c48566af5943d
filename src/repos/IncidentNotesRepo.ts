import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type IncidentId, newId, type OrgId } from "../domain/ids.ts"
import { dbErrors } from "../platform/db/errors.ts"

/** A note as an incident's page shows it: plain text, its author (a console user's id, or `cli`) and their email. */
export interface IncidentNoteRow {
  readonly id: string
  readonly author: string
  readonly authorEmail: string | null
  readonly body: string
  readonly createdAt: Date
}

/** Notes that an organization's users add to its incidents (triage). Every query filters on the organization. */
export class IncidentNotesRepo extends Effect.Service<IncidentNotesRepo>()("IncidentNotesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return {
      /** Adds a note to an incident of `orgId`; the caller has checked that the incident is the organization's. */
      add: (note: { orgId: OrgId; incidentId: IncidentId; author: string; body: string }, at: Date = new Date()) => {
        const id = newId("incidentNote", at.getTime())
        return sql`insert into incident_notes (id, org_id, incident_id, author, body, created_at)
          values (${id}, ${note.orgId}, ${note.incidentId}, ${note.author}, ${note.body}, ${at})`.pipe(
          Effect.as({ id, createdAt: at }),
          dbErrors,
        )
      },
      /** An incident's notes, oldest first. */
      forIncident: (orgId: OrgId, incidentId: IncidentId) =>
        sql<IncidentNoteRow>`
          select n.id, n.author, u.email as author_email, n.body, n.created_at
          from incident_notes n left join console_users u on u.id = n.author
          where n.org_id = ${orgId} and n.incident_id = ${incidentId}
          order by n.created_at, n.id`.pipe(dbErrors),
    } as const
  }),
}) {}
