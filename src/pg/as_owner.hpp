// Running a step as another role: the one place in the glue that switches the user. A step runs
// in a security-restricted operation with search_path pinned and, for a read that must see every
// row, row_security off, the way PostgreSQL's maintenance commands run a table owner's code
// (doc/design.md "Running as the owner"). The conversion and time partitions run every statement
// on a table through it as the table's owner, the read of stored keys as the bootstrap superuser.
// Include after postgres.h.
#pragma once

// A step: whom it runs as, and what an error raised in it says it came from.
struct RoleStep {
    Oid role;
    const char *function_name;  // the SQL function whose step it is, "snowflake_convert_column()"
    const char *what;           // the statement, or what the step does
    bool see_every_row;         // row_security off: a read that policies must not filter
};

// What entering a step changed, for leaving it to restore. After an error in between, the
// (sub)transaction's abort restores the user and the settings, and the error's longjmp the error
// context stack.
struct EnteredStep {
    ErrorContextCallback context;
    Oid saved_user;
    int saved_security_context;
    int guc_nest_level;
};

// The owner, read fresh from the catalog: each step runs as the owner of its own table.
Oid owner_of(Oid relation);

// Pins search_path to pg_catalog, pg_temp for the rest of a call, as SET search_path on a
// function would; returns the nest level for unpin_search_path.
int pin_search_path();

// Undoes every setting changed since pin_search_path, the pin included.
void unpin_search_path(int guc_nest_level);

// Switches to the step's role; entered must stay where it is until leave_step.
void enter_step(const RoleStep &step, EnteredStep *entered);

// Switches back, undoing every setting the step's code made, so that the next step starts from
// the caller again.
void leave_step(EnteredStep *entered);

// Runs body() as the step's role; body must not leave by any way but returning or an error.
template <typename Body>
void run_as_role(const RoleStep &step, Body body) {
    EnteredStep entered;
    enter_step(step, &entered);
    body();
    leave_step(&entered);
}

// Runs one SQL statement of the step through SPI (which the caller connected) as the step's role,
// with a snapshot taken for it (after every lock the caller waited for); returns the row count.
uint64 run_statement_as(const RoleStep &step, const char *statement, int argument_count = 0,
                        Oid *argument_types = nullptr, Datum *arguments = nullptr,
                        const char *nulls = nullptr);
