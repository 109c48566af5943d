-- D32/D33 change feeds: GET /v1/incidents/changes and GET /v1/events/changes.
--
-- A change's position is (change_xid, change_seq): the id of the transaction that wrote it (xid8, never wraps) and a
-- number from one sequence. A reader takes h = pg_snapshot_xmin(pg_current_snapshot()) in the same statement as the
-- rows and returns only positions with change_xid < h: every transaction with an xid below h has ended, so that part
-- of the order is final (nothing can still commit into it), and a token never passes h. A transaction still in flight,
-- or not started yet, has an xid >= h, so its changes sort after every token handed out while it was running, however
-- late it commits and whatever sequence numbers it took. (Ordering by the sequence alone would not do: a transaction
-- takes its number early and commits late, after a later number is visible.)
--
-- The bookkeeping is column defaults and triggers, so every write path (ingestion, admin close, idle close) records
-- its changes in its own transaction without knowing about the feeds.

create sequence feed_change_seq;

-- Events: a stored event is a change. Rows stored before this version get the position of this migration.
alter table events add column change_xid xid8;
alter table events add column change_seq bigint;
update events e set change_xid = pg_current_xact_id(), change_seq = o.n
from (select id, nextval('feed_change_seq') as n from (select id from events order by received_at, id) s) o
where o.id = e.id;
alter table events alter column change_xid set default pg_current_xact_id();
alter table events alter column change_xid set not null;
alter table events alter column change_seq set default nextval('feed_change_seq');
alter table events alter column change_seq set not null;
-- A feed page is one range scan of this index; `from` (time of storing) starts with the second.
create index events_org_change_idx on events (org_id, change_xid, change_seq);
create index events_org_received_idx on events (org_id, received_at);

-- Incidents: every insert or update of an incident row is a change, logged with the incident's state as of it (the
-- feed's item). An incident's change_xid is the larger of its writer's xid and that of its previous change, so a
-- later change of one incident always sorts after its earlier one, even when the later writer got its xid first
-- (an admin close that waited on the row lock of an ingestion). That keeps the invariant above: a change's position
-- is never below its own writer's xid.
alter table incidents add column change_xid xid8 not null default '0';

create table incident_changes (
  org_id              text not null,
  change_xid          xid8 not null,
  change_seq          bigint not null default nextval('feed_change_seq'),
  changed_at          timestamptz not null default now(),
  incident_id         text not null,
  sensor_id           text not null,
  source_ip           text not null,
  status              text not null,
  severity            text not null,
  title               text not null,
  narrative           text not null,
  recommended_action  text not null,
  event_count         integer not null,
  event_types         text[] not null,
  high_confidence     boolean not null,
  first_seen_at       timestamptz not null,
  last_seen_at        timestamptz not null,
  resolved_at         timestamptz,
  primary key (org_id, change_xid, change_seq)
);
create index incident_changes_org_changed_idx on incident_changes (org_id, changed_at);
create index incident_changes_incident_idx on incident_changes (incident_id);

create function incident_change_position() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' then
    -- OLD is the latest committed version: the row is locked by now.
    new.change_xid := greatest(pg_current_xact_id(), old.change_xid);
  else
    new.change_xid := pg_current_xact_id();
  end if;
  return new;
end $$;

create function incident_change_log() returns trigger language plpgsql as $$
begin
  insert into incident_changes (org_id, change_xid, incident_id, sensor_id, source_ip, status, severity, title,
    narrative, recommended_action, event_count, event_types, high_confidence, first_seen_at, last_seen_at,
    resolved_at)
  values (new.org_id, new.change_xid, new.id, new.sensor_id, new.source_ip, new.status, new.severity, new.title,
    new.narrative, new.recommended_action, new.event_count, new.event_types, new.high_confidence,
    new.first_seen_at, new.last_seen_at, new.resolved_at);
  return null;
end $$;

-- Incidents as they are now: one change each, at this migration's position (in order of last activity).
update incidents set change_xid = pg_current_xact_id();
insert into incident_changes (org_id, change_xid, changed_at, incident_id, sensor_id, source_ip, status, severity,
  title, narrative, recommended_action, event_count, event_types, high_confidence, first_seen_at, last_seen_at,
  resolved_at)
select org_id, change_xid, updated_at, id, sensor_id, source_ip, status, severity, title, narrative,
  recommended_action, event_count, event_types, high_confidence, first_seen_at, last_seen_at, resolved_at
from incidents order by last_activity_at, id;

-- BEFORE sets the position (on an upsert's conflict only the UPDATE one counts); AFTER logs only what was written.
create trigger incidents_change_position before insert or update on incidents
  for each row execute function incident_change_position();
create trigger incidents_change_log after insert or update on incidents
  for each row execute function incident_change_log();
