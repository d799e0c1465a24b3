-- The intervals of time partitions (1.12): the library's one table of them, the refusals, hints
-- and comments made from it, quarters and years, one period for the hours before the epoch, and a
-- setup printed as the call that makes it again. The clock is the real one, so the output shows
-- only what holds at any date.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
CREATE SCHEMA intervals;
SET search_path = intervals, public;

SELECT every, name_suffix FROM snowflake_partition_intervals();

-- Every interval that a refusal, a hint or a comment names is one of
-- snowflake_partition_intervals(), and each refusal names them all. The refusal's own ", not ..."
-- names the interval it refused. A setup written by hand with another interval is refused as
-- maintenance reads it.
CREATE TABLE hand_written (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) > 0 AS set_up FROM snowflake_partition_table('hand_written', '1 day', 0);
UPDATE snowflake_catalog.snowflake_partitioned_tables SET every = '2 days'
WHERE parent = 'hand_written'::regclass;
CREATE TEMP TABLE interval_texts (source text, words text);
DO $$
DECLARE
    message text;
    hint text;
BEGIN
    BEGIN
        PERFORM snowflake_maintain_partitions('hand_written');
    EXCEPTION WHEN invalid_parameter_value THEN
        GET STACKED DIAGNOSTICS message = MESSAGE_TEXT;
        INSERT INTO interval_texts VALUES ('the refusal of a setup', message);
    END;
    BEGIN
        PERFORM snowflake_partition_boundaries('2 days', 'UTC', now(), now());
    EXCEPTION WHEN invalid_parameter_value THEN
        GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
        INSERT INTO interval_texts
        VALUES ('the refusal of an argument', split_part(message, ', not ', 1)),
               ('its hint', hint);
    END;
END
$$;
INSERT INTO interval_texts
SELECT 'the comment of ' || p.oid::regprocedure, obj_description(p.oid, 'pg_proc')
FROM pg_proc AS p JOIN pg_depend AS d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
JOIN pg_extension AS e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
WHERE e.extname = 'snowflake' AND p.proname ~ 'partition';
CREATE FUNCTION pg_temp.named_intervals(words text) RETURNS SETOF interval
    LANGUAGE sql AS $$
    SELECT DISTINCT m[1]::interval
    FROM regexp_matches(words, '(\d+ (?:hour|day|week|month|year)s?)\M', 'g') AS m $$;
SELECT count(*) FILTER (WHERE source ~ '^the refusal|^its hint') AS refusals,
       count(*) FILTER (WHERE source ~ '^the comment') > 5 AS comments
FROM interval_texts;
SELECT t.source, i.every AS named_but_not_offered
FROM interval_texts AS t, pg_temp.named_intervals(t.words) AS i(every)
WHERE i.every NOT IN (SELECT every FROM snowflake_partition_intervals());
SELECT t.source AS names_not_every_interval FROM interval_texts AS t
WHERE t.source ~ '^the refusal|^its hint' AND EXISTS (
    SELECT every FROM snowflake_partition_intervals()
    EXCEPT SELECT * FROM pg_temp.named_intervals(t.words));
-- No text lists the units in words (1.11's comments said "one hour, day, week or month"), and the
-- comments of the functions that take an interval name the function that lists them.
SELECT source AS lists_units_in_words FROM interval_texts
WHERE words ~* '\m(hour|day|week|month|quarter|year)s?,? (or )?(hour|day|week|month|quarter|year)s?\M';
SELECT source AS names_no_list FROM interval_texts
WHERE source IN ('the comment of snowflake_partition_table(regclass,interval,integer,interval,text,boolean)',
                 'the comment of snowflake_partition_boundaries(interval,text,timestamp with time zone,timestamp with time zone)')
  AND words !~ 'snowflake_partition_intervals\(\)';
DELETE FROM snowflake_catalog.snowflake_partitioned_tables WHERE parent = 'hand_written'::regclass;

-- Quarters and years, named so that their names sort as their ranges do, in a zone of their own.
CREATE TABLE quarterly (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
CREATE TABLE yearly (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SELECT count(*) AS quarters FROM snowflake_partition_table('quarterly', '3 months', 2, NULL, 'Asia/Tokyo');
SELECT count(*) AS years FROM snowflake_partition_table('yearly', '1 year', 1, '2 years', 'Asia/Tokyo');
INSERT INTO quarterly DEFAULT VALUES;
INSERT INTO yearly DEFAULT VALUES;
SELECT parent, bool_and(partition ~ CASE parent WHEN 'quarterly'::regclass THEN '^quarterly_p\d{4}q[1-4]$'
                                               ELSE '^yearly_p\d{4}$' END) AS named,
       array_agg(partition ORDER BY lower) = array_agg(partition ORDER BY partition) AS sorted,
       bool_and(lower = snowflake_min_id(date_trunc(CASE parent WHEN 'quarterly'::regclass THEN 'quarter' ELSE 'year' END,
                                                    snowflake_timestamp(lower), 'Asia/Tokyo'))) AS aligned
FROM (SELECT p.parent, r.partition::text AS partition, r.lower_id AS lower
      FROM (VALUES ('quarterly'::regclass), ('yearly'::regclass)) AS p(parent),
           LATERAL snowflake_partition_ranges(p.parent) AS r) AS parts
GROUP BY parent ORDER BY parent::text;
SELECT parent, reaches_until >= now() + every AS a_period_ahead FROM snowflake_partition_reach
WHERE parent IN ('quarterly'::regclass, 'yearly'::regclass) ORDER BY parent::text;
-- Every interval's periods from the epoch: the hours before it, which all begin at id 0, are one
-- period, and no period is empty.
SELECT every, count(*) AS periods, bool_and(ends > starts) AS none_empty,
       min(starts) = snowflake_timestamp(0) AS the_first_starts_at_the_epoch
FROM snowflake_partition_intervals() AS i,
     LATERAL snowflake_partition_boundaries(i.every, 'UTC', '2010-11-04 00:00+00',
                                            '2010-11-04 03:00+00') AS b
GROUP BY every ORDER BY every;

-- A setup printed as the call that makes it again, as a selective restore needs it: run once the
-- setup is gone, it adopts the table's partitions and writes the same setup. Its arguments are
-- typed, so that no overload of other types is called in its place.
SELECT snowflake_partition_setup_sql('yearly') AS setup_sql;
SELECT snowflake_partition_setup_sql('pg_class') IS NULL AS none_without_a_setup;
CREATE TEMP TABLE printed AS SELECT snowflake_partition_setup_sql('yearly') AS setup_sql;
DELETE FROM snowflake_catalog.snowflake_partitioned_tables WHERE parent = 'yearly'::regclass;
SELECT format('SELECT action, count(*) FROM (%s) AS again GROUP BY action', rtrim(setup_sql, ';'))
FROM printed \gexec
SELECT every, ahead, retain, time_zone, drop_expired FROM snowflake_partitioned_tables
WHERE parent = 'yearly'::regclass;
-- The same for odd names and no retention, beside a function of the same name that takes text.
CREATE SCHEMA "S p";
CREATE TABLE "S p"."O'dd" (id bigint NOT NULL DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SELECT count(*) AS months FROM snowflake_partition_table('"S p"."O''dd"', '1 month', 1,
                                                          time_zone => 'America/Santiago',
                                                          drop_expired => true);
CREATE FUNCTION public.snowflake_partition_table(named text, every_text text, ahead integer,
                                                 retain text, time_zone text, drop_expired boolean)
RETURNS TABLE (parent regclass, partition text, action text) LANGUAGE sql
AS $$ SELECT NULL::regclass, NULL, 'the overload ran' $$;
SELECT snowflake_partition_setup_sql('"S p"."O''dd"') AS setup_sql;
TRUNCATE printed;
INSERT INTO printed SELECT snowflake_partition_setup_sql('"S p"."O''dd"');
DELETE FROM snowflake_catalog.snowflake_partitioned_tables WHERE parent = '"S p"."O''dd"'::regclass;
SELECT format('SELECT action, count(*) FROM (%s) AS again GROUP BY action', rtrim(setup_sql, ';'))
FROM printed \gexec
SELECT every, ahead, retain, time_zone, drop_expired FROM snowflake_partitioned_tables
WHERE parent = '"S p"."O''dd"'::regclass;
DROP FUNCTION public.snowflake_partition_table(text, text, integer, text, text, boolean);

SET client_min_messages = warning;
DROP SCHEMA intervals CASCADE;
DROP SCHEMA "S p" CASCADE;
RESET client_min_messages;
DELETE FROM snowflake_catalog.snowflake_partitioned_tables;
RESET search_path;
RESET timezone;
