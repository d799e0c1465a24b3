// What the files of the changes room share (src/pg/changes/), beside its door changes.hpp; no
// other room includes it. Include only after postgres.h.
#pragma once

// The root of the relation's partition tree, or the relation itself (tombstones.cpp).
Oid snowflake_tree_root(Oid relation);
