-- Search in the console: `/incidents?q=` and `/events?q=` find events whose attacker input or summary holds the
-- typed text (a case-insensitive substring), served by a trigram index.
--
-- pg_trgm is a trusted extension shipped with PostgreSQL (the embedded server's and Debian's).
create extension if not exists pg_trgm;

-- What an event is searched by: its summary and every string of its attacker input at any depth (usernames,
-- commands, URLs, hashes, file names, paths), one a line, lower-cased, cut at 2000 characters so the index stays
-- bounded whatever an attacker sent. Member names and numbers are not searched. A line break separates the values,
-- and the console never accepts one in a search, so a search never matches across two values.
-- The walk collects every string before the cut, so it runs only on an input of the size ingestion stores (at most
-- 16 KiB of JSON); a larger one, stored before inputs were bounded, is searched by the start of its JSON text
-- (member names included): walking one of 7 MB took 1.8 s, its text 0.1 s.
create function event_search_text(summary text, attacker_input jsonb) returns text
  language sql immutable parallel safe
  return left(lower(summary || coalesce(e'\n' || case when pg_column_size(attacker_input) <= 65536 then (
    select string_agg(v #>> '{}', e'\n')
    from jsonb_path_query(attacker_input, 'strict $.** ? (@.type() == "string")') as v
  ) else left(attacker_input::text, 4000) end, '')), 2000);

-- Kept by PostgreSQL itself, so every writer (ingestion, the repair of stored rows, a bulk load) fills it without
-- knowing of it; adding it computes it once for the events already stored.
alter table events add column search_text text generated always as (event_search_text(summary, attacker_input)) stored;

-- Substring search (LIKE '%…%') through trigrams, over the events the lists show (not the ignored ones).
create index events_search_idx on events using gin (search_text gin_trgm_ops) where ignore_rule_id is null;

-- The incident list's "inside your networks" filter: the few internal incidents, newest activity first (the
-- external ones are most of them, found by walking incidents_org_recent_idx).
create index incidents_org_internal_recent_idx on incidents (org_id, last_seen_at desc, id desc)
  where source_scope = 'internal';
