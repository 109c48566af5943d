-- The audit trail by API: GET /v1/audit (newest first, filtered by actor, action and time) and GET /v1/audit/changes,
-- a change feed with the incident and event feeds' rules (sql/0015_change_feeds.sql): a row's position is
-- (change_xid, change_seq), the id of the transaction that wrote it and a number of the feeds' sequence, read only
-- below the horizon pg_snapshot_xmin(pg_current_snapshot()), so a follower never skips a row, however late its
-- writer commits. Audit rows are written once and never updated: the column defaults are the whole bookkeeping, and
-- every writer (console, CLI, sign-in) records its rows in its own transaction without knowing about the feed.

-- Rows written before this version get the position of this migration, in the order they were written.
alter table audit_log add column change_xid xid8;
alter table audit_log add column change_seq bigint;
update audit_log a set change_xid = pg_current_xact_id(), change_seq = o.n
from (select id, nextval('feed_change_seq') as n from (select id from audit_log order by at, id) s) o
where o.id = a.id;
alter table audit_log alter column change_xid set default pg_current_xact_id();
alter table audit_log alter column change_xid set not null;
alter table audit_log alter column change_seq set default nextval('feed_change_seq');
alter table audit_log alter column change_seq set not null;
-- A feed page is one range scan of this index. Rows without an organization (the operator's own commands, sign-ins
-- of an unknown address) are in no organization's feed or list.
create index audit_log_org_change_idx on audit_log (org_id, change_xid, change_seq);

-- The feed's purge mark. Nothing purges audit rows today (they are kept for as long as the database is); the mark
-- is there so that a purge added later answers a token from before it with 410 token_expired, as the other feeds do.
alter table feed_purges drop constraint feed_purges_feed_check;
alter table feed_purges add constraint feed_purges_feed_check
  check (feed in ('incidents/changes', 'events/changes', 'audit/changes'));

-- A fourth API key scope, audit:read: the audit trail, for a key that reads no incident, event or intelligence.
alter table api_keys drop constraint api_keys_scopes_check;
alter table api_keys add constraint api_keys_scopes_check
  check (scopes <@ array['incidents:read', 'events:read', 'intel:read', 'audit:read']::text[]
    and cardinality(scopes) > 0);
