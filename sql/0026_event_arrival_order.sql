-- An incident's events in time order, and in order of arrival within one time: a sensor's lines of one millisecond
-- (a Cowrie connect and the login that follows it) keep the order the sensor sent them. change_seq is taken as each
-- row is inserted (0015), in the order of the request's lines. Walked forwards for the oldest events (the incident's
-- timeline) and backwards for the newest (the webhook payload). Only events no rule ignored, as those statements read.
create index events_incident_arrival_idx on events (org_id, incident_id, time, change_seq) where ignore_rule_id is null;
