/*
 * A mark record as releases before 1.10 wrote it, for a primary that runs the current extension:
 * eight bytes, the int64 mark_unix_ms alone, where 1.10 adds the node bits after it. A standby
 * that replays it stands in for one whose primary is still on 1.9. The record goes to the
 * extension's resource manager (RM_EXPERIMENTAL_ID, op code 0x00 for a mark), so the primary
 * must preload the extension for its own crash recovery to read it. Built and declared by
 * create_old_mark_function() in test/perl/SnowflakeTest.pm; used by test/t/032_mark_extremes.pl.
 */
#include "postgres.h"

#include "access/rmgr.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "fmgr.h"
#include "utils/pg_lsn.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(snowflake_test_old_mark);

/* Writes the record, flushes it so that walsenders ship it at once, and returns its end. */
Datum snowflake_test_old_mark(PG_FUNCTION_ARGS) {
    int64 mark_unix_ms = PG_GETARG_INT64(0);
    XLogRecPtr end;

    XLogBeginInsert();
    XLogRegisterData((char *)&mark_unix_ms, sizeof(mark_unix_ms));
    end = XLogInsert(RM_EXPERIMENTAL_ID, 0x00);
    XLogFlush(end);
    PG_RETURN_LSN(end);
}
