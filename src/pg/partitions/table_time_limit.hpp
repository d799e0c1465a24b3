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

// Ends the limit, however the table's maintenance ended; each start has its end.
void end_table_time_limit();

// Whether a cancel raised by the server during the table's maintenance is the limit's: the limit
// was reached, no cancel signal arrived meanwhile, and it is worded as a user's request (a
// statement_timeout is worded as its own).
bool cancel_was_time_limit(const ErrorData *error);
