-- Events partitioned by month of their time (PostgreSQL's declarative partitioning), and the incidents feed by month
-- of its writing, so that retention drops a whole month instead of deleting its rows one by one, and every index
-- stays the size of a month.
--
-- What a partitioned table cannot hold itself moves out:
-- - A unique constraint must contain the partition key, so "a sensor's event id is stored once" (a resend is a
--   duplicate, whatever time it carries) is kept by a narrow table of its own, written in the same statement.
-- - The primary key becomes (id, time); an event id is a ULID whose time part is the event's time, so a lookup by id
--   names its month.
--
-- Existing events stay where they are: the old table becomes the partition of every time before the month after
-- the newest stored event (events_before), purged by batches as before until its rows have aged out; months after it
-- get partitions of their own (month_partitions_ensure below; a job creates them ahead). The keys are copied and the old
-- table gets the (id, time) key: on a large database this migration takes a while, during which the service does not
-- start (the migration is one transaction; operators.md says how long to expect).

create table event_keys (
  sensor_id text not null,
  sensor_event_id text not null,
  event_id text not null,
  received_at timestamptz not null,
  primary key (sensor_id, sensor_event_id)
);
insert into event_keys (sensor_id, sensor_event_id, event_id, received_at)
  select sensor_id, sensor_event_id, id, received_at from events;
-- Keys go with their organization's events (src/jobs/retention.ts): each sensor's oldest first.
create index event_keys_sensor_received_idx on event_keys (sensor_id, received_at);

alter table events rename to events_before;
alter table events_before drop constraint events_sensor_event_unique;
alter table events_before drop constraint events_pkey;
alter table events_before add constraint events_before_pkey primary key (id, time);
drop trigger events_attacker_input_bytes on events_before;
-- Index names are the schema's: the old table's indexes take its name, so the partitioned table's can take theirs.
do $$
declare r record;
begin
  for r in select c.relname from pg_index i join pg_class c on c.oid = i.indexrelid
    where i.indrelid = 'events_before'::regclass and c.relname like 'events\_%' and c.relname <> 'events_before_pkey'
  loop
    execute format('alter index %I rename to %I', r.relname, 'events_before_' || substr(r.relname, 8));
  end loop;
end
$$;
-- A partition must hold its parent's checks valid (one read of the old table; every row written since it was added
-- already met it).
alter table events_before validate constraint events_incident_or_ignored_check;

create table events (
  id text not null,
  org_id text not null constraint events_org_id_fkey references organizations (id),
  incident_id text constraint events_incident_id_fkey references incidents (id),
  sensor_id text not null constraint events_sensor_id_fkey references sensors (id),
  sensor_event_id text not null,
  time timestamptz not null,
  source_ip text not null,
  source_port integer not null,
  service text not null,
  port integer not null,
  type text not null,
  action text not null,
  severity text not null constraint events_severity_check check (severity in ('low', 'medium', 'high', 'critical')),
  confidence text not null constraint events_confidence_check check (confidence in ('low', 'normal', 'high')),
  tags text[] not null default '{}',
  summary text not null,
  attacker_input jsonb not null default '{}',
  received_at timestamptz not null,
  change_xid xid8 not null default pg_current_xact_id(),
  change_seq bigint not null default nextval('feed_change_seq'),
  attacker_input_bytes integer,
  ignore_rule_id text constraint events_ignore_rule_id_fkey references ignore_rules (id),
  search_text text generated always as (event_search_text(summary, attacker_input)) stored,
  constraint events_incident_or_ignored_check check ((incident_id is null) = (ignore_rule_id is not null)),
  constraint events_pkey primary key (id, time)
) partition by range (time);

create trigger events_attacker_input_bytes before insert or update of attacker_input on events
  for each row execute function events_attacker_input_bytes();

-- The same indexes as before, now one per partition.
create index events_org_received_idx on events (org_id, received_at);
create index events_org_recent_idx on events (org_id, time desc, id desc) where ignore_rule_id is null;
create index events_org_sensor_idx on events (org_id, sensor_id, time desc, id desc) where ignore_rule_id is null;
create index events_org_severity_idx on events (org_id, severity, time desc, id desc) where ignore_rule_id is null;
create index events_org_type_idx on events (org_id, type, time desc, id desc) where ignore_rule_id is null;
create index events_org_source_ip_idx on events (org_id, source_ip, time desc, id desc) where ignore_rule_id is null;
create index events_org_change_idx on events (org_id, change_xid, change_seq) where ignore_rule_id is null;
create index events_incident_idx on events (org_id, incident_id, time desc, id desc) where incident_id is not null;
create index events_org_ignored_idx on events (org_id, time desc, id desc) where ignore_rule_id is not null;
create index events_incident_arrival_idx on events (org_id, incident_id, time, change_seq) where ignore_rule_id is null;
create index events_incident_ref_idx on events (incident_id) where incident_id is not null;
create index events_search_idx on events using gin (search_text gin_trgm_ops) where ignore_rule_id is null;
create index events_org_overview_idx on events (org_id, time) include (source_ip, sensor_id, service, port, type)
  where ignore_rule_id is null;
create index events_org_command_idx on events (org_id, time)
  where ignore_rule_id is null and attacker_input ? 'command';

-- The old table holds every time before the month after the newest stored event. With no events stored yet that is
-- 2000 (nothing earlier is accepted), so every month may have its own partition.
do $$
declare
  newest timestamptz := (select max(time) from events_before);
  bound timestamptz := case when newest is null then timestamptz '2000-01-01 00:00:00+00'
    else date_trunc('month', greatest(newest, now()), 'UTC') + interval '1 month' end;
begin
  execute format('alter table events attach partition events_before for values from (minvalue) to (%L)', bound);
end
$$;

-- Events whose month has no partition (a late event for a month already dropped, or one older than the months
-- kept): few, purged by batches.
create table events_default partition of events default;

-- The incidents feed's rows the same way, by month of their writing (changed_at), so that the feed's retention drops
-- whole months too. Written at the time of writing, its rows never arrive late.
alter table incident_changes rename to incident_changes_before;
alter index incident_changes_incident_idx rename to incident_changes_before_incident_idx;
alter index incident_changes_org_changed_idx rename to incident_changes_before_org_changed_idx;
alter table incident_changes_before drop constraint incident_changes_pkey;
alter table incident_changes_before add constraint incident_changes_before_pkey
  primary key (org_id, change_xid, change_seq, changed_at);
create table incident_changes (like incident_changes_before including defaults) partition by range (changed_at);
alter table incident_changes add constraint incident_changes_pkey primary key (org_id, change_xid, change_seq, changed_at);
create index incident_changes_incident_idx on incident_changes (incident_id);
create index incident_changes_org_changed_idx on incident_changes (org_id, changed_at);
do $$
declare
  newest timestamptz := (select max(changed_at) from incident_changes_before);
  bound timestamptz := case when newest is null then timestamptz '2000-01-01 00:00:00+00'
    else date_trunc('month', greatest(newest, now()), 'UTC') + interval '1 month' end;
begin
  execute format(
    'alter table incident_changes attach partition incident_changes_before for values from (minvalue) to (%L)', bound);
end
$$;
create table incident_changes_default partition of incident_changes default;

-- The time a range partition's rows end before (the upper bound of its FOR VALUES ... TO (...)): where a month
-- partition ends, and where the months after a _before partition begin. Read by the purge too.
create function partition_ends_at(partition regclass) returns timestamptz
language sql stable
return (select (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz
  from pg_class c where c.oid = partition);

-- Creates the missing monthly partitions <table>_YYYY_MM (UTC months) of events and incident_changes from the month
-- of `from_time` to the month of `to_time`, and returns how many it created. A month the old table (<table>_before)
-- covers is skipped, and so is one whose rows already sit in <table>_default (they stay there and are purged by
-- batches): a partition may not take rows its default partition holds. Making a partition locks the table and the
-- tables its foreign keys name: it waits for them at most 300 ms (less than PostgreSQL's deadlock_timeout, so it is
-- always this statement that gives up, never a transaction of the service's) and leaves that month for the next
-- call. Safe to run from several processes at once.
create function month_partitions_ensure(from_time timestamptz, to_time timestamptz) returns integer
language plpgsql as $$
declare
  parent text;
  covered timestamptz;
  month timestamptz;
  made integer := 0;
  name text;
  waited text := current_setting('lock_timeout');
begin
  perform set_config('lock_timeout', '300ms', true);
  foreach parent in array array['events', 'incident_changes'] loop
    covered := partition_ends_at((parent || '_before')::regclass);
    month := greatest(date_trunc('month', from_time, 'UTC'), covered);
    while month <= date_trunc('month', to_time, 'UTC') loop
      name := parent || '_' || to_char(month at time zone 'UTC', 'YYYY_MM');
      if to_regclass(name) is null then
        begin
          execute format('create table %I partition of %I for values from (%L) to (%L)',
            name, parent, month, month + interval '1 month');
          made := made + 1;
        exception
          when check_violation then null; -- the default partition holds rows of this month
          when duplicate_table then null; -- another process made it first
          when lock_not_available then null; -- the table is busy: the next call makes it
        end;
      end if;
      month := month + interval '1 month';
    end loop;
  end loop;
  perform set_config('lock_timeout', waited, true);
  return made;
end
$$;
