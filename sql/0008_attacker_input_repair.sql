-- Password-like values are masked under more names now, and attacker input is cleaned and typed: rows stored by older
-- versions may hold a non-string username, a null or boolean password, or a secret in clear under a name masked only
-- from now on (passwd, access_token, ...), or inside a URL or form body. The read side already shows any of them
-- safely (src/domain/attackerInput.ts, readableAttackerInput); the stored rows themselves are rewritten by the service
-- after start-up (src/ingest/AttackerInputRepair.ts), because masking needs each organization's fingerprint key, which
-- SQL cannot unseal. This table holds such one-off rewrites: the task's name and how far it got (the last event id
-- done).
create table maintenance_tasks (
  name       text primary key,
  position   text not null default '',
  created_at timestamptz not null default now()
);

-- Only when there are rows to repair: a new database (every event stored by this version or later) has none, and
-- without this its first start walked every event loaded since (a one-off pass over the benchmark's 1M seeded
-- events ran under its first load). A database that already applied this migration is not affected.
insert into maintenance_tasks (name) select 'attacker_input_d19_d20' where exists (select 1 from events);
