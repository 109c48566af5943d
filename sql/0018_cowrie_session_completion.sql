-- D42: a Cowrie session's lines may arrive in any order (Cowrie's HEC output sends them concurrently, one connection
-- each), and they must group exactly as in order. Three things make that so, all written inside the ingest
-- transaction, under the advisory lock of the session's source address (every line of a session has the same one):
--
-- cowrie_sessions: a session may now be known before its connect line (protocol and ports still unknown).
alter table cowrie_sessions alter column protocol drop not null;
alter table cowrie_sessions alter column source_port drop not null;
alter table cowrie_sessions alter column port drop not null;

-- The events stored from a session's lines, with what each line named itself (protocol, source port, decoy port).
-- An event stored before its session's connect was known is `complete = false`; when the connect arrives, the
-- event's type, ports and summary are completed and its incident's event types and texts written again.
create table cowrie_session_events (
  org_id           text not null,
  sensor_id        text not null,
  session          text not null,
  event_id         text not null,
  action           text not null,
  own_protocol     boolean not null,
  own_source_port  boolean not null,
  own_port         boolean not null,
  complete         boolean not null,
  created_at       timestamptz not null,
  primary key (sensor_id, session, event_id)
);
create index cowrie_session_events_incomplete_idx on cowrie_session_events (sensor_id, session) where not complete;
create index cowrie_session_events_created_idx on cowrie_session_events (created_at);

-- The details of the lines that only describe the attacker's client (client version, HASSH, terminal size,
-- environment, public key offered, JA4/JA4H, session duration), already cleaned and masked like any attackerInput.
-- The session's client members are computed from all of them (the earliest line wins a member), so the result does
-- not depend on the order of arrival; they are added to every event of the session.
create table cowrie_session_details (
  org_id      text not null,
  sensor_id   text not null,
  session     text not null,
  line_id     text not null,
  time        timestamptz not null,
  details     jsonb not null,
  created_at  timestamptz not null,
  primary key (sensor_id, session, line_id)
);
create index cowrie_session_details_created_idx on cowrie_session_details (created_at);
