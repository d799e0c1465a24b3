// The time limit of one table in the maintenance of every table (table_time_limit.cpp): the
// table's owner's code runs in the maintainer's session, and must not hold up the tables after
// hers, while a cancel of the maintainer's own still ends the whole call. Include after
// postgres.h.
#pragma once

// Starts the limit: after limit_ms, and every second after that, a cancel is asked for, as
// statement_timeout asks for one; a cancel signal that arrives meanwhile is noted as a real one.
// Inside a running limit (the owner's code maintaining every table) it starts nothing: the outer
// limit goes on.
void start_table_time_limit(int limit_ms);

// Ends the limit, however the table's maintenance ended; each start has its end. Returns whether
// a cancel of the caller's came while it ran (always false for an inner limit), which the owner's
// code may have caught: the call must end all the same.
bool end_table_time_limit();

// Where a cancel during the table's maintenance came from. A cancel of the caller's comes as a
// signal: pg_cancel_backend(), a client's cancel, and statement_timeout, which signals its own
// process (a lock_timeout's signal is not counted). The limit asks for a cancel with no signal.
// Neither: the owner's code raised it.
enum class CancelCause { kSignal, kTimeLimit, kOwnersCode };

// What the limit saw while it ran, read once the step has ended, well or not: a cancel signal of
// the caller's, the limit reached, or neither.
CancelCause cancel_cause();
