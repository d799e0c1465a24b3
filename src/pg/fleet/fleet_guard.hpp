// The fleet guard's background worker (fleet_guard.cpp). Include only after postgres.h: it is
// part of the glue.
#pragma once

// Registers the worker; only while shared_preload_libraries is loaded.
void snowflake_register_fleet_guard();
