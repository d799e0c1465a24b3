-- Every member of the extension, described with all that a script sets on it (a function's
-- definition and privileges, a type's, a table's columns with their privileges and comments,
-- constraints, indexes, triggers with their state, options, row security and grants, a view's
-- query), and the tables pg_dump dumps as configuration, for comparing one installation with
-- another:
-- sql/install.sql (a fresh install against the update chain) and test/t/014_upgrade.pl (after
-- pg_upgrade) both read this file.
CREATE FUNCTION pg_temp.extension_objects() RETURNS SETOF text LANGUAGE sql AS $$
SELECT pg_describe_object(d.classid, d.objid, 0)
       || coalesce(' ' || obj_description(d.objid, d.classid::regclass::text), '')
       || CASE d.classid
              WHEN 'pg_proc'::regclass THEN coalesce((
                  SELECT concat_ws(' ', '', aggtransfn, aggcombinefn, aggsortop::regoperator,
                                   aggtranstype::regtype)
                  FROM pg_aggregate WHERE aggfnoid = d.objid),
                  ' ' || pg_get_functiondef(d.objid)) || ' public:'
                  || has_function_privilege('public', d.objid, 'EXECUTE')
                  || coalesce(' ' || (SELECT proacl::text FROM pg_proc WHERE oid = d.objid), '')
              WHEN 'pg_type'::regclass THEN ' ' || coalesce((
                  SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', '
                                    ORDER BY a.attnum)
                  FROM pg_type AS t JOIN pg_attribute AS a ON a.attrelid = t.typrelid
                  WHERE t.oid = d.objid AND a.attnum > 0), '') || coalesce((
                  SELECT concat_ws(' ', '', typinput, typoutput, typreceive, typsend, typlen,
                                   typbyval, typalign, typstorage, typcategory)
                  FROM pg_type WHERE oid = d.objid AND typtype = 'b'), '')
                  || coalesce(' ' || (SELECT typacl::text FROM pg_type WHERE oid = d.objid), '')
              WHEN 'pg_operator'::regclass THEN (
                  SELECT concat_ws(' ', '', oprcode, oprcom::regoperator, oprnegate::regoperator,
                                   oprrest, oprjoin, oprcanhash, oprcanmerge)
                  FROM pg_operator WHERE oid = d.objid)
              WHEN 'pg_opclass'::regclass THEN (
                  SELECT concat_ws(' ', '', opcintype::regtype, opcdefault)
                  FROM pg_opclass WHERE oid = d.objid)
              WHEN 'pg_cast'::regclass THEN (
                  SELECT concat_ws(' ', '', castfunc::regprocedure, castcontext, castmethod)
                  FROM pg_cast WHERE oid = d.objid)
              WHEN 'pg_opfamily'::regclass THEN (
                  SELECT ' ' || string_agg(m, ', ' ORDER BY m) FROM (
                      SELECT format('%s %s', amopstrategy, amopopr::regoperator) AS m
                      FROM pg_amop WHERE amopfamily = d.objid
                      UNION ALL
                      SELECT format('%s (%s,%s) %s', amprocnum, amproclefttype::regtype,
                                    amprocrighttype::regtype, amproc::regprocedure)
                      FROM pg_amproc WHERE amprocfamily = d.objid) AS members)
              WHEN 'pg_class'::regclass THEN coalesce((
                  SELECT ' ' || string_agg(concat_ws(' ', a.attname,
                                                     format_type(a.atttypid, a.atttypmod),
                                                     CASE WHEN a.attnotnull THEN 'not null' END,
                                                     'default ' || pg_get_expr(f.adbin, f.adrelid),
                                                     a.attacl::text,
                                                     col_description(a.attrelid, a.attnum)),
                                           ', ' ORDER BY a.attnum)
                  FROM pg_attribute AS a
                  LEFT JOIN pg_attrdef AS f ON f.adrelid = a.attrelid AND f.adnum = a.attnum
                  WHERE a.attrelid = d.objid AND a.attnum > 0 AND NOT a.attisdropped), '')
                  || coalesce((
                      SELECT ' ' || string_agg(pg_get_constraintdef(oid), ', '
                                               ORDER BY pg_get_constraintdef(oid))
                      FROM pg_constraint WHERE conrelid = d.objid), '')
                  || coalesce((
                      SELECT ' ' || string_agg(
                          concat_ws(' ', pg_get_indexdef(indexrelid),
                                    obj_description(indexrelid, 'pg_class')),
                          ', ' ORDER BY pg_get_indexdef(indexrelid))
                      FROM pg_index WHERE indrelid = d.objid), '')
                  || coalesce((
                      SELECT ' ' || string_agg(
                          concat_ws(' ', pg_get_triggerdef(oid), tgenabled,
                                    obj_description(oid, 'pg_trigger')),
                          ', ' ORDER BY tgname)
                      FROM pg_trigger WHERE tgrelid = d.objid AND NOT tgisinternal), '')
                  || (SELECT concat_ws(' ', '', CASE WHEN relkind = 'v' THEN pg_get_viewdef(oid) END,
                                       relacl, reloptions, relrowsecurity, relforcerowsecurity,
                                       relreplident)
                      FROM pg_class WHERE oid = d.objid)
              WHEN 'pg_event_trigger'::regclass THEN (
                  SELECT concat_ws(' ', '', evtevent, evtfoid::regprocedure, evtenabled, evttags)
                  FROM pg_event_trigger WHERE oid = d.objid)
              ELSE '' END
FROM pg_depend AS d JOIN pg_extension AS e ON d.refobjid = e.oid
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'snowflake'
UNION ALL
SELECT 'configuration tables '
       || coalesce((SELECT string_agg(c::regclass::text, ', ' ORDER BY c::regclass::text)
                    FROM unnest(extconfig) AS c), '')
       || ' ' || coalesce(extcondition::text, '')
FROM pg_extension WHERE extname = 'snowflake'
$$;
