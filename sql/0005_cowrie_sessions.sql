-- D22: what a Cowrie session's connect line told (only `cowrie.session.connect` names the protocol and the ports),
-- so the session's later lines sent in another request map to the right types and ports. Written by the ingest
-- route (insert ... on conflict do nothing), read by (sensor_id, session); rows older than a few days may be pruned
-- (CowrieSessionsRepo.pruneOlderThan): a session lasts minutes, a shipper's backlog hours.
create table cowrie_sessions (
  org_id       text not null references organizations (id),
  sensor_id    text not null references sensors (id),
  -- Cowrie's session id ([A-Za-z0-9_-]{1,64}); never returned by the API.
  session      text not null,
  protocol     text not null check (protocol in ('ssh', 'telnet')),
  source_port  integer not null check (source_port between 0 and 65535),
  port         integer not null check (port between 0 and 65535),
  created_at   timestamptz not null,
  primary key (sensor_id, session)
);
-- The prune deletes by age.
create index cowrie_sessions_created_idx on cowrie_sessions (created_at);
