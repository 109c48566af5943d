-- D32: a first call's `from` compares the time a change was written. now() is the time its transaction began, so a
-- change written and committed after `from` by a transaction that began before it fell outside `from`. A change's
-- time is now the clock when its row is written (clock_timestamp()): only the gap between writing a row and its
-- commit (milliseconds for the service's own writes) remains. 0015 is left as it was (it may already be applied).
alter table incident_changes alter column changed_at set default clock_timestamp();
