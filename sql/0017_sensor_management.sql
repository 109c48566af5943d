-- D43: sensors are managed (rename, rotate, revoke, list with status) and say when they were last heard from.
-- Every column is nullable or has a default, so rows written before this keep working unchanged (`revoked_at`
-- and `profile` exist since 0001; a stored profile outside today's list is kept as it is).

alter table sensors
  -- Any authenticated ingest request, a heartbeat, an OpenCanary boot line: written at most once per
  -- LAST_SEEN_EVERY_MS per sensor (SensorsRepo.touchLastSeen), never moved back. Null: never heard from.
  add column last_seen_at timestamptz,
  -- The heartbeat the sensor promises (`POST /ingest/v1/heartbeat` on a timer). Null: none expected, so the
  -- sensor is never `silent`. A sensor that misses three intervals is `silent` (SensorsRepo.statusOf).
  add column heartbeat_interval_seconds integer
    constraint sensors_heartbeat_interval_check
    check (heartbeat_interval_seconds is null or heartbeat_interval_seconds between 30 and 604800),
  -- The health last announced to the alert channels (`sensor.silent` / `sensor.recovered`): the silent-detection
  -- sweep compares it with the status computed now and moves it with a compare-and-set (SensorsRepo.setHealth),
  -- so one change is announced once however many processes sweep.
  add column health text not null default 'unknown'
    constraint sensors_health_check check (health in ('unknown', 'alive', 'silent')),
  add column health_changed_at timestamptz,
  -- Rotation grace (as webhook secrets, D16): the previous token's SHA-256 keeps authenticating until it expires.
  add column previous_token_hash bytea,
  add column previous_token_expires_at timestamptz,
  add column updated_at timestamptz not null default now(),
  add constraint sensors_previous_token_check
    check ((previous_token_hash is null) = (previous_token_expires_at is null));

update sensors set updated_at = created_at;

-- The silent-detection sweep reads only the sensors that expect a heartbeat and are not revoked.
create index sensors_heartbeat_watch_idx on sensors (org_id, id)
  where heartbeat_interval_seconds is not null and revoked_at is null;
