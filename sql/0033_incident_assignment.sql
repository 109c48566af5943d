-- Triage that two analysts and a SOAR tool can see: who owns an incident, whether and when someone acknowledged it
-- (saw it), and why the current close happened. The API's incidents and the incident feed carry them read-only.
--
-- close_reason is the reason of the latest close: null when the idle-close sweep closed it (the service, not a
-- person); a re-open leaves it, and it is shown only while the incident is closed (a re-opened one has none).
alter table incidents
  add column assignee_user_id text references console_users (id),
  add column acknowledged_at timestamptz,
  add column acknowledged_by text,
  add column close_reason text check (close_reason in ('resolved', 'false_positive', 'authorized_test', 'other'));

alter table incident_changes
  add column assignee_user_id text,
  add column acknowledged_at timestamptz,
  add column close_reason text;

-- "Assigned to me" and the owner filter: an organization's incidents of one owner, newest activity first.
create index incidents_org_assignee_recent_idx on incidents (org_id, assignee_user_id, last_seen_at desc, id desc)
  where assignee_user_id is not null;

-- Each acknowledgement and (un)assignment, for the incident's history: who did it, when, to whom.
create table incident_triage (
  id                text primary key,
  org_id            text not null references organizations (id),
  incident_id       text not null references incidents (id),
  kind              text not null check (kind in ('acknowledged', 'assigned', 'unassigned')),
  -- A console user's id, or `cli` for the operator.
  actor             text not null,
  assignee_user_id  text references console_users (id),
  at                timestamptz not null,
  check ((kind = 'assigned') = (assignee_user_id is not null))
);
create index incident_triage_incident_idx on incident_triage (incident_id, at, id);

-- Closed incidents get the reason of their latest close. No feed change: what the incident showed
-- before is unchanged, and the field is new.
alter table incidents disable trigger incidents_change_position;
alter table incidents disable trigger incidents_change_log;
update incidents i set close_reason = t.close_reason
from (
  select distinct on (incident_id) incident_id, close_reason from incident_transitions
  where kind = 'closed'
  order by incident_id, at desc
) t
where t.incident_id = i.id and i.status = 'closed';
alter table incidents enable trigger incidents_change_position;
alter table incidents enable trigger incidents_change_log;

create or replace function incident_change_log() returns trigger language plpgsql as $$
begin
  insert into incident_changes (org_id, change_xid, incident_id, sensor_id, source_ip, status, severity, title,
    narrative, recommended_action, event_count, event_types, high_confidence, first_seen_at, last_seen_at,
    resolved_at, bait_credential, source_scope, source_network, linked, other_sensors, assignee_user_id,
    acknowledged_at, close_reason)
  values (new.org_id, new.change_xid, new.id, new.sensor_id, new.source_ip, new.status, new.severity, new.title,
    new.narrative, new.recommended_action, new.event_count, new.event_types, new.high_confidence,
    new.first_seen_at, new.last_seen_at, new.resolved_at, new.bait_credential, new.source_scope, new.source_network,
    new.linked, new.other_sensors, new.assignee_user_id, new.acknowledged_at,
    case when new.status = 'closed' then new.close_reason end);
  return null;
end $$;
