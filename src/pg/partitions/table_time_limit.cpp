// The time limit of one table in the maintenance of every table (table_time_limit.hpp). The limit
// asks for a cancel the way statement_timeout does, so that the owner's code is interrupted
// wherever it checks for interrupts. A cancel signal (pg_cancel_backend(), a client's cancel)
// sets the same flag, and the owner's code may catch the limit's cancel and go on; so the limit
// asks again every second, and a cancel signal is noted by a SIGINT handler of its own, which
// hands the signal on to the handler it replaced, for as long as the limit runs. A cancel is told
// apart by these two notes alone, not by the wording or origin of its error.

extern "C" {
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/elog.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

#include <cerrno>

#include "pg/partitions/table_time_limit.hpp"

namespace {

// Set by the timer once the limit is reached, by the SIGINT handler when a cancel signal comes.
volatile sig_atomic_t limit_reached = false;
volatile sig_atomic_t cancel_signalled = false;

// The SIGINT handler in place before the limit started, restored when it ends.
struct sigaction sigint_before;

// How many limits are running: a table owner's code may call the maintenance of every table
// while hers runs. Only the outermost installs the handler and the timer, so that the handler is
// never saved as the one it hands signals on to (which recursed until the stack overflowed), and
// the inner tables run within the outer table's limit.
int running_limits = 0;

// Asks for a cancel, as statement_timeout does.
void ask_for_cancel() {
    limit_reached = true;
    QueryCancelPending = true;
    InterruptPending = true;
    SetLatch(MyLatch);
}

// Notes a cancel of the caller's, then lets the replaced handler ask for it as it always does.
// lock_timeout signals its own process too, but its lock waits are the table's: the step sets
// lock_timeout, and the owner's code can wait for a lock of her own other session.
void note_cancel_signal(int signo, siginfo_t *info, void *context) {
    const int saved_errno = errno;
    // A statement_timeout that fired with it is the caller's all the same.
    const bool own_lock_timeout = info != nullptr && info->si_pid == MyProcPid &&
                                  get_timeout_indicator(LOCK_TIMEOUT, false) &&
                                  !get_timeout_indicator(STATEMENT_TIMEOUT, false);
    if (!own_lock_timeout) {
        cancel_signalled = true;
    }
    if ((sigint_before.sa_flags & SA_SIGINFO) != 0) {
        sigint_before.sa_sigaction(signo, info, context);
    } else if (sigint_before.sa_handler != SIG_DFL && sigint_before.sa_handler != SIG_IGN) {
        sigint_before.sa_handler(signo);
    }
    errno = saved_errno;
}

// The limit's timer, registered once per backend.
TimeoutId limit_timer() {
    static TimeoutId timer = MAX_TIMEOUTS;
    if (timer == MAX_TIMEOUTS) {
        timer = RegisterTimeout(USER_TIMEOUT, ask_for_cancel);
    }
    return timer;
}

}  // namespace

// The replaced handler is read before the new one is installed, so that a signal in between is
// handed on to it.
void start_table_time_limit(int limit_ms) {
    if (running_limits++ > 0) {
        return;
    }
    limit_reached = false;
    cancel_signalled = false;
    (void)sigaction(SIGINT, nullptr, &sigint_before);
    struct sigaction noting {};
    noting.sa_sigaction = note_cancel_signal;
    noting.sa_mask = sigint_before.sa_mask;
    noting.sa_flags = SA_SIGINFO | (sigint_before.sa_flags & SA_RESTART);
    (void)sigaction(SIGINT, &noting, nullptr);
    // The limit of the table before withdrew its own cancel, so a cancel still asked for came as a
    // signal before the handler was in place.
    if (QueryCancelPending) {
        cancel_signalled = true;
    }
    enable_timeout_every(limit_timer(),
                         TimestampTzPlusMilliseconds(GetCurrentTimestamp(), limit_ms), 1000);
}

// A cancel still asked for without a signal of the caller's is the table's (the limit's, or a lock
// timeout's) and is withdrawn, so that it cannot end the next table or the call. SIGINT is blocked
// meanwhile, so that no signal's cancel is withdrawn with it.
bool end_table_time_limit() {
    if (--running_limits > 0) {
        return false;
    }
    disable_timeout(limit_timer(), false);
    sigset_t sigint_only;
    sigset_t blocked_before;
    sigemptyset(&sigint_only);
    sigaddset(&sigint_only, SIGINT);
    (void)sigprocmask(SIG_BLOCK, &sigint_only, &blocked_before);
    if (!cancel_signalled) {
        QueryCancelPending = false;
        (void)get_timeout_indicator(LOCK_TIMEOUT, true);
    }
    (void)sigaction(SIGINT, &sigint_before, nullptr);
    (void)sigprocmask(SIG_SETMASK, &blocked_before, nullptr);
    return cancel_signalled;
}

// A signal wins: a cancel of the caller's that comes after the limit was reached still ends the
// whole call.
CancelCause cancel_cause() {
    if (cancel_signalled) {
        return CancelCause::kSignal;
    }
    return limit_reached ? CancelCause::kTimeLimit : CancelCause::kOwnersCode;
}
