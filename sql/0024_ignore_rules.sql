-- D44 ignore rules: an organization's administrators say which activity is known and harmless (their own
-- vulnerability scanner, a monitoring probe). An event that matches an active rule when it is ingested is stored and
-- marked with the rule, joins no incident and sends nothing; the reads of the API, the feeds and MCP leave it out.
-- A rule never rewrites what is stored: removing one (removed_at) changes only later events, and the events it
-- ignored keep naming it.

create table ignore_rules (
  id           text primary key,
  org_id       text not null references organizations (id),
  -- The source it matches: one address is a /32 (IPv4) or /128 (IPv6) network.
  source       cidr not null,
  -- Optional narrowing: one sensor of the organization, one decoy port, one event type.
  sensor_id    text references sensors (id),
  port         integer constraint ignore_rules_port_check check (port is null or port between 0 and 65535),
  event_type   text,
  note         text not null default '',
  -- A console user's id, or `cli` (as the audit log's actor).
  created_by   text not null,
  created_at   timestamptz not null,
  expires_at   timestamptz,
  -- Moved by the ingest transaction that stored the events it ignored (so a rolled-back request counts nothing).
  hit_count    bigint not null default 0,
  last_hit_at  timestamptz,
  removed_at   timestamptz,
  removed_by   text
);

-- Settings → Ignore rules and `admin ignore list`: an organization's rules not removed, oldest first.
create index ignore_rules_org_idx on ignore_rules (org_id, created_at, id) where removed_at is null;
-- The ingest's match: the rules whose network contains an event's source (`source >>= address`), found through the
-- tree of networks rather than by reading every rule of the organization (cheap with thousands of rules).
create index ignore_rules_source_idx on ignore_rules using gist (source inet_ops) where removed_at is null;

-- The rule that ignored an event (null: not ignored). An ignored event belongs to no incident; every other event to
-- one. Not validated against the rows stored before (all have an incident), so adding it reads no row.
alter table events add column ignore_rule_id text references ignore_rules (id);
alter table events alter column incident_id drop not null;
alter table events add constraint events_incident_or_ignored_check
  check ((incident_id is null) = (ignore_rule_id is not null)) not valid;

-- The API's lists and the events feed read only events that are not ignored: their keyset and position indexes hold
-- only those, so a flood of ignored events (a scanner) adds nothing to the pages' scans. Rebuilt here once (the table
-- is locked while they are built).
drop index events_org_recent_idx;
create index events_org_recent_idx on events (org_id, time desc, id desc) where ignore_rule_id is null;
drop index events_org_sensor_idx;
create index events_org_sensor_idx on events (org_id, sensor_id, time desc, id desc) where ignore_rule_id is null;
drop index events_org_severity_idx;
create index events_org_severity_idx on events (org_id, severity, time desc, id desc) where ignore_rule_id is null;
drop index events_org_type_idx;
create index events_org_type_idx on events (org_id, type, time desc, id desc) where ignore_rule_id is null;
drop index events_org_source_ip_idx;
create index events_org_source_ip_idx on events (org_id, source_ip, time desc, id desc) where ignore_rule_id is null;
drop index events_org_change_idx;
create index events_org_change_idx on events (org_id, change_xid, change_seq) where ignore_rule_id is null;
-- An incident's events (the incidentId filter, recounts): an ignored event has no incident, so this index holds the
-- same rows as before; its predicate says so, which lets the lists' statements (ignored events left out) use it.
drop index events_incident_idx;
create index events_incident_idx on events (org_id, incident_id, time desc, id desc) where incident_id is not null;
-- The console's "show ignored events": the ignored events of an organization, newest first.
create index events_org_ignored_idx on events (org_id, time desc, id desc) where ignore_rule_id is not null;
