-- Triage in the console: why an incident was closed, by whom, and the notes its readers add.
--
-- A `closed` transition now says why (`close_reason`, one of four words), may carry the closer's note, and names who
-- closed it (`actor`: a console user's id, or `cli` for the operator). A closed transition without an actor was
-- written by the service itself: the idle-close sweep. Other kinds keep all three empty. Nothing here changes what
-- the API or the webhooks send.
alter table incident_transitions add column close_reason text
  check (close_reason in ('resolved', 'false_positive', 'authorized_test', 'other'));
alter table incident_transitions add column close_note text check (char_length(close_note) <= 2000);
alter table incident_transitions add column actor text;
alter table incident_transitions add constraint incident_transitions_close_only
  check (kind = 'closed' or (close_reason is null and close_note is null and actor is null));

-- Closes made by a person before this version: their actor is in the audit log, written in the same transaction.
update incident_transitions t set actor = a.actor
from audit_log a
where t.kind = 'closed' and a.action = 'incident.close' and a.target = t.incident_id
  and a.at >= t.at and a.at < t.at + interval '1 minute';

-- Notes on an incident, oldest first on its page. Plain text, written by a console user (or `cli`).
create table incident_notes (
  id           text primary key,
  org_id       text not null references organizations (id),
  incident_id  text not null references incidents (id),
  author       text not null,
  body         text not null check (char_length(body) between 1 and 2000),
  created_at   timestamptz not null
);
create index incident_notes_incident_idx on incident_notes (incident_id, created_at, id);

