-- What is wrong with the quota table, one line for people; 'missing' when the table or a
-- function is not there yet (the schema script creates them); NULL when all is well. It reads
-- only the catalog, so that a role without CREATE can run it.
SELECT CASE
  WHEN to_regclass('sluice_quota') IS NULL THEN 'missing'
  WHEN columns IS DISTINCT FROM 'bucket text, value bytea, window_start timestamp with time zone, '
                                'window_end timestamp with time zone, used bigint'
    THEN 'the table sluice_quota has the columns (' || coalesce(columns, '') || '); Sluice needs '
         '(bucket text, value bytea, window_start timestamptz, window_end timestamptz, '
         'used bigint): drop or rename it, or point quota_store at another database'
  WHEN to_regprocedure('sluice_quota_take_v2(integer[], text[], bytea[], bigint[], bigint[], '
                       'text[], bigint[], boolean[], timestamptz)') IS NULL
    OR to_regprocedure('sluice_quota_cleanup_v2(integer, timestamptz)') IS NULL
    OR to_regprocedure('sluice_quota_set_v2(text, bytea, text, bigint, bigint, timestamptz)')
       IS NULL
    OR to_regprocedure('sluice_quota_get_v2(text, bytea, text, bigint, timestamptz)') IS NULL
    THEN 'missing'
  -- After the functions: the schema script gives a table of the first version its new key.
  WHEN NOT EXISTS (
      SELECT 1 FROM pg_index AS i
       WHERE i.indrelid = to_regclass('sluice_quota') AND i.indisunique AND i.indnatts = 4
         AND (SELECT array_agg(a.attname::text ORDER BY k.ord)
                FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)
             = ARRAY['bucket', 'value', 'window_start', 'window_end'])
    THEN 'the table sluice_quota has no primary key (or unique index) on (bucket, value, '
         'window_start, window_end): run `sluice quota init` as its owner, drop it, or point '
         'quota_store at another database'
  END
FROM (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', '
                        ORDER BY a.attnum) AS columns
        FROM pg_attribute AS a
       WHERE a.attrelid = to_regclass('sluice_quota') AND a.attnum > 0
         AND NOT a.attisdropped) AS t
