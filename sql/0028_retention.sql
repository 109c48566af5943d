-- D49 retention. An organization may keep its events for another number of days than RETENTION_DAYS (null: the
-- service's setting); set by an admin in the console, audited.
alter table organizations add column retention_days integer
  constraint organizations_retention_days_check check (retention_days is null or retention_days >= 1);

-- The furthest feed position the purge has deleted, per organization and feed. A feed token before it has missed
-- changes that no longer exist: the feed answers 410 token_expired (start again with `from`). Written in the
-- transaction that deletes the rows, so a feed page (one snapshot) sees the rows gone and the mark moved together.
create table feed_purges (
  org_id      text not null references organizations (id),
  feed        text not null check (feed in ('incidents/changes', 'events/changes')),
  purged_xid  xid8 not null,
  purged_seq  bigint not null,
  primary key (org_id, feed)
);

