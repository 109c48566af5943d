-- D13 idle close counts from the arrival of an incident's latest event (the server's clock), not from the sensor's
-- event time: an event reported late (a sensor that was offline, a backfill) is new activity, and closing its
-- incident at once only to re-open it on the next late event would flap (and send incident.reopened webhooks).
-- The default keeps replicas of the previous version (which do not write the column) working during a rolling update.
alter table incidents add column last_activity_at timestamptz not null default now();
-- Until now an incident's row changed only when an event joined it or when it closed.
update incidents set last_activity_at = updated_at;

drop index incidents_open_idle_idx;
create index incidents_open_idle_idx on incidents (last_activity_at) where status = 'open';
