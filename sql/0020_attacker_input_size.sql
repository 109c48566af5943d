-- Issue "Hardening 2" item 4, corrected: the read side does not read a stored attackerInput larger than 64 KiB
-- (src/repos/EventsRepo.ts, STORED_INPUT_READ_MAX). It measured that with pg_column_size, the size as stored:
-- compressed, so a megabyte of repetitive text passed whole. The real size (the UTF-8 length of the value written
-- out as JSON text) is now kept beside the value, computed once when it is written, so a read compares an integer
-- and never decompresses a value it will not show.

-- Null on rows written before this migration: the read side measures those itself (see EVENT_SELECT).
-- A nullable column without a default: added without rewriting the table.
alter table events add column attacker_input_bytes integer;

create function events_attacker_input_bytes() returns trigger language plpgsql as $$
begin
  new.attacker_input_bytes := octet_length(new.attacker_input::text);
  return new;
end
$$;

-- Every writer (ingestion, the repair of stored rows, a bulk load) gets it without knowing of it.
create trigger events_attacker_input_bytes before insert or update of attacker_input on events
  for each row execute function events_attacker_input_bytes();

-- Older rows over the bound are rewritten once, in the background, by the existing bounded repair
-- (src/ingest/AttackerInputRepair.ts: batches of 500 by event id, resumable, rows already in the stored shape left
-- alone): queued again from the start, only where there are events.
insert into maintenance_tasks (name) select 'attacker_input_d19_d20' where exists (select 1 from events)
  on conflict (name) do update set position = '';
