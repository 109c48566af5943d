-- D43: a webhook channel opts in to sensor-health alerts (`sensor.silent` when a sensor that expects a heartbeat
-- missed three, `sensor.recovered` when it is heard from again). The default is false: a channel created before
-- this receives nothing new.
alter table webhook_channels add column sensor_health boolean not null default false;

-- The silent-detection sweep reads one organization's enabled, opted-in channels when a sensor's health changes.
create index webhook_channels_sensor_health_idx on webhook_channels (org_id, id) where sensor_health and enabled;

-- The deliveries of sensor alerts have no incident and no transition (as `webhook.test`): their type says what they
-- are, and the compare-and-set on sensors.health (one caller moves it) is what queues each announcement once.
comment on column webhook_deliveries.type is
  'Body type: incident.created, incident.escalated, incident.reopened, webhook.test, sensor.silent, sensor.recovered';
