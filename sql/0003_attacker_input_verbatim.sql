-- attackerInput is stored with the attacker's own member names from now on. Before, the SQL client's nested-JSON
-- name transform stored them camelCase→snake_case and read them back snake_case→camelCase, so `user_name` was
-- answered as `userName` (and a name ending in `_` broke the read). Stored rows are rewritten to the names the API
-- answered with until now (Effect's String.snakeToCamel, applied at every depth), so no answer changes for them.
create function pg_temp.snake_to_camel(k text) returns text language plpgsql immutable as $$
declare
  result text := substr(k, 1, 1);
  i integer := 2;
  n integer := length(k);
  c text;
begin
  while i <= n loop
    c := substr(k, i, 1);
    if c = '_' and i < n then
      result := result || upper(substr(k, i + 1, 1));
      i := i + 2;
    else
      result := result || c;
      i := i + 1;
    end if;
  end loop;
  return result;
end $$;

create function pg_temp.camel_keys(j jsonb) returns jsonb language plpgsql immutable as $$
begin
  case jsonb_typeof(j)
    when 'object' then
      return coalesce(
        (select jsonb_object_agg(pg_temp.snake_to_camel(e.key), pg_temp.camel_keys(e.value)) from jsonb_each(j) e),
        '{}'::jsonb);
    when 'array' then
      return coalesce((select jsonb_agg(pg_temp.camel_keys(a.value) order by a.n)
                       from jsonb_array_elements(j) with ordinality a(value, n)), '[]'::jsonb);
    else
      return j;
  end case;
end $$;

update events set attacker_input = pg_temp.camel_keys(attacker_input)
where attacker_input::text like '%\_%' escape '\';

drop function pg_temp.camel_keys(jsonb);
drop function pg_temp.snake_to_camel(text);
