-- How an incident is judged: by its most significant activity, whether its source is inside the organization's
-- networks, whether a bait credential was used, and whether the source had already touched another decoy.

-- An organization's own networks: null until an admin edits the list (then the private ranges are the default, in
-- code, so a better default reaches every organization that never chose). Each element {cidr, label}.
alter table organizations add column networks jsonb;

-- Bait credentials an admin planted: the username and the keyed fingerprint of the password (the one captured
-- passwords get), never the password itself.
create table bait_credentials (
  id                    text primary key,
  org_id                text not null references organizations (id),
  username              text not null,
  password_fingerprint  text not null,
  label                 text not null default '',
  created_at            timestamptz not null,
  unique (org_id, username, password_fingerprint)
);

-- Events by type (the most significant activity and brute force vs a single attempt need counts), the highest
-- severity of the member events (the judged severity adds floors and steps to it), the bait flag, the source's
-- classification, and whether the incident began while the source was on another sensor (a step up, kept).
-- events_severity may be null (a row an older version wrote during a rolling upgrade): read as the severity.
alter table incidents
  add column type_counts jsonb not null default '{}',
  add column events_severity text check (events_severity in ('low', 'medium', 'high', 'critical')),
  add column bait_credential boolean not null default false,
  add column source_scope text not null default 'external' check (source_scope in ('internal', 'external')),
  add column source_network jsonb,
  add column linked boolean not null default false,
  -- Other sensors of the organization whose incidents from the same address overlap this one's activity within 7
  -- days: written by ingestion when an incident begins (its own, and its siblings'), read as it is.
  add column other_sensors integer not null default 0;

alter table incident_changes
  add column bait_credential boolean not null default false,
  add column source_scope text not null default 'external',
  add column source_network jsonb,
  add column linked boolean not null default false,
  add column other_sensors integer not null default 0;

-- One source across sensors (linking, GET /v1/sources/{ip}): an organization's incidents of one address, newest first.
create index incidents_org_source_idx on incidents (org_id, source_ip, last_seen_at desc);

-- Backfill without logging a feed change per incident: the incidents' visible state does not change here.
alter table incidents disable trigger incidents_change_position;
alter table incidents disable trigger incidents_change_log;
update incidents i set events_severity = i.severity,
  type_counts = coalesce((
    select jsonb_object_agg(t.type, t.n) from (
      select e.type, count(*) as n from events e where e.org_id = i.org_id and e.incident_id = i.id group by e.type
    ) t), '{}');
-- Sources already in the default networks (src/domain/networks.ts DEFAULT_NETWORKS, the list every organization has
-- until an admin edits it) are internal; their texts are written again with their next activity.
update incidents i set source_scope = 'internal', source_network = jsonb_build_object('cidr', d.cidr, 'label', d.label)
from (values ('10.0.0.0/8', 'Private network (10/8)'), ('172.16.0.0/12', 'Private network (172.16/12)'),
  ('192.168.0.0/16', 'Private network (192.168/16)'), ('fc00::/7', 'Unique local IPv6 (fc00::/7)')) as d(cidr, label)
where i.source_ip::inet <<= d.cidr::inet;
update incidents i set other_sensors = (
  select count(distinct o.sensor_id) from incidents o
  where o.org_id = i.org_id and o.source_ip = i.source_ip and o.sensor_id <> i.sensor_id
    and o.last_seen_at >= i.first_seen_at - interval '7 days' and o.first_seen_at <= i.last_seen_at + interval '7 days')
where exists (select from incidents o where o.org_id = i.org_id and o.source_ip = i.source_ip and o.sensor_id <> i.sensor_id);
alter table incidents enable trigger incidents_change_position;
alter table incidents enable trigger incidents_change_log;

create or replace function incident_change_log() returns trigger language plpgsql as $$
begin
  insert into incident_changes (org_id, change_xid, incident_id, sensor_id, source_ip, status, severity, title,
    narrative, recommended_action, event_count, event_types, high_confidence, first_seen_at, last_seen_at,
    resolved_at, bait_credential, source_scope, source_network, linked, other_sensors)
  values (new.org_id, new.change_xid, new.id, new.sensor_id, new.source_ip, new.status, new.severity, new.title,
    new.narrative, new.recommended_action, new.event_count, new.event_types, new.high_confidence,
    new.first_seen_at, new.last_seen_at, new.resolved_at, new.bait_credential, new.source_scope, new.source_network,
    new.linked, new.other_sensors);
  return null;
end $$;

