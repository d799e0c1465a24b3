# PGXS build of the snowflake extension (C++17), its tests and its tools.

EXTENSION = snowflake
MODULE_big = snowflake
# Every source of the core and the glue: a new file is built without a change here.
OBJS = $(patsubst %.cpp,%.o,$(sort $(wildcard src/core/*.cpp src/pg/*.cpp src/pg/*/*.cpp)))
# The first version's script and the update scripts from it: CREATE EXTENSION runs the chain
# (doc/design.md "The install script"), so a new version adds one file here.
DATA = $(wildcard src/sql/snowflake--*.sql)
PGFILEDESC = "snowflake - Twitter-layout Snowflake ids"
# The documentation beyond the README, installed beside other extensions' documentation.
DOCS = doc/design.md doc/operations.md doc/performance.md doc/reference.md doc/security.md \
	doc/testing.md

# pg_regress, pg_isolation_regress and prove each start their own throwaway servers, configured
# by test/snowflake.conf. With TEST_SERVER=running, pg_regress and pg_isolation_regress use the
# server that the PG* environment names instead, set up as that file says, and the TAP tests,
# which need servers of their own, are left out (debian/tests/installcheck).
REGRESS = codec generate info errors time_predicates partitioning peers convert key_defaults type \
	convert_type partitions partition_intervals partition_zones publications settled changes \
	install
ISOLATION = interleaved_order time_predicates_sessions partition_stranger settled_bound
ifeq ($(TEST_SERVER),running)
ISOLATION_OPTS = --inputdir=test/isolation
else
REGRESS_OPTS = --temp-instance=tmp_check_regress --temp-config=test/snowflake.conf
ISOLATION_OPTS = --inputdir=test/isolation --temp-instance=tmp_check_iso \
	--temp-config=test/snowflake.conf
TAP_TESTS = 1
endif
# PROVE_TESTS=test/t/007_damaged_mark.pl on the command line or in the environment picks files.
# By default the longest files go first, so that with several at a time (TAP_JOBS) the layer does
# not end waiting for one long file that started last; the rest follow in name order.
TAP_LONGEST = 028_data_directory_histories 019_keys_floor 034_keys_floor_databases \
	017_fleet_guard 004_restarts 026_partition_setups 029_settled_bound \
	031_starts_behind_history 009_failover_under_load 025_partitions 018_upgrade_across_versions
TAP_FIRST = $(wildcard $(patsubst %,test/t/%.pl,$(TAP_LONGEST)))
PROVE_TESTS ?= $(TAP_FIRST) $(filter-out $(TAP_FIRST),$(sort $(wildcard test/t/*.pl)))
EXTRA_CLEAN = tmp_check_regress tmp_check_iso output_iso .pg_build_stamp META.json test/unit/build \
	test/unit/unit_tests \
	test/unit/unit_tests_sanitized test/fuzz/fuzz_core test/bench/core_bench

# The extension's version, from the control file: the library reports it (PostgreSQL 18's
# pg_get_loaded_modules()) and the release is named after it.
EXTVERSION := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(dir $(firstword $(MAKEFILE_LIST)))snowflake.control)

# -fno-exceptions is the error boundary: no C++ exception can exist to cross into PostgreSQL.
# PostgreSQL headers before 16 still use the register keyword that C++17 removed.
SNOWFLAKE_CXXFLAGS = -std=c++17 -fno-exceptions -fno-rtti -I$(srcdir)/src -Wno-register \
	-DSNOWFLAKE_VERSION=\"$(EXTVERSION)\"
# Warnings fail the build; a packager on an untested compiler or server version may set WERROR=.
WERROR ?= -Werror
PG_CXXFLAGS = $(SNOWFLAKE_CXXFLAGS) -Wall -Wextra $(WERROR) -Wno-unused-parameter
# libpq, for the peer check's connections to other servers.
PG_CPPFLAGS = -I$(shell $(PG_CONFIG) --includedir)
SHLIB_LINK = -lstdc++
SHLIB_LINK_INTERNAL = -lpq

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# In a directory of their own, since their names (design.md, ...) would clash in the shared one.
docmoduledir := extension/snowflake

# The tests' own helpers (test/perl/SnowflakeTest.pm), added after PGXS sets PG_PROVE_FLAGS, so
# that a PROVE_FLAGS given on the command line (--verbose) keeps them; and TAP_JOBS test files at
# once, which wait more than they compute (each server gets a free port of its own).
TAP_JOBS ?= 2
PG_PROVE_FLAGS += -I $(srcdir)/test/perl -j$(TAP_JOBS)

# PGXS installs DOCS by their base names but would remove them by their paths.
uninstall: uninstall-docs
uninstall-docs:
	rm -f $(addprefix '$(DESTDIR)$(docdir)/$(docmoduledir)'/, $(notdir $(DOCS)))

# The LLVM bitcode for JIT inlining is compiled by clang from the same sources and flags.
BITCODE_CXXFLAGS += $(SNOWFLAKE_CXXFLAGS)

# Every object is rebuilt when a header changes (the shared-memory struct's layout must agree
# across all of them), when PG_CONFIG names another PostgreSQL (an object built for one does not
# load into another: the stamp file is rewritten whenever the server version differs), and when
# the control file changes (the library reports its version).
PG_BUILD_STAMP = .pg_build_stamp
$(shell echo '$(PG_CONFIG) $(VERSION)' | cmp -s - $(PG_BUILD_STAMP) || \
	echo '$(PG_CONFIG) $(VERSION)' > $(PG_BUILD_STAMP))
$(OBJS) $(OBJS:.o=.bc): $(wildcard $(srcdir)/src/core/*.hpp $(srcdir)/src/pg/*.hpp \
	$(srcdir)/src/pg/*/*.hpp) $(PG_BUILD_STAMP) $(srcdir)/snowflake.control
# The library is linked again when the Makefile changes: PGXS keeps objects as secondary files, so
# a source added to a built tree would otherwise be left out of it.
$(shlib): $(firstword $(MAKEFILE_LIST))

CORE_SOURCES = $(wildcard src/core/*.cpp)
CORE_HEADERS = $(wildcard src/core/*.hpp)
UNIT_SOURCES = $(wildcard test/unit/*_test.cpp)
UNIT_FLAGS = -std=c++17 -Wall -Wextra -Werror -I$(srcdir)/src -pthread
SANITIZE_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# One object per source and build, so that make -j compiles them side by side; each is rebuilt
# when any core header changes.
UNIT_OBJECTS = $(patsubst %.cpp,test/unit/build/plain/%.o,$(CORE_SOURCES) $(UNIT_SOURCES))
SANITIZED_OBJECTS = $(patsubst %.cpp,test/unit/build/sanitized/%.o,$(CORE_SOURCES) $(UNIT_SOURCES))
test/unit/build/plain/%.o: %.cpp $(CORE_HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(UNIT_FLAGS) -O2 -c $< -o $@
test/unit/build/sanitized/%.o: %.cpp $(CORE_HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(UNIT_FLAGS) -O1 -g $(SANITIZE_FLAGS) -c $< -o $@

test/unit/unit_tests: $(UNIT_OBJECTS)
	$(CXX) $(UNIT_FLAGS) $^ -lgtest -lgtest_main -o $@

test/unit/unit_tests_sanitized: $(SANITIZED_OBJECTS)
	$(CXX) $(UNIT_FLAGS) $(SANITIZE_FLAGS) $^ -lgtest -lgtest_main -o $@

# The core's unit tests, plain and under AddressSanitizer and UndefinedBehaviorSanitizer.
unitcheck: test/unit/unit_tests test/unit/unit_tests_sanitized
	test/unit/unit_tests
	test/unit/unit_tests_sanitized

FUZZ_CXX ?= clang++-14
FUZZ_SECONDS ?= 30

test/fuzz/fuzz_core: $(CORE_SOURCES) $(CORE_HEADERS) test/fuzz/fuzz_core.cpp
	$(FUZZ_CXX) -std=c++17 -g -O1 -I$(srcdir)/src -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all $(CORE_SOURCES) test/fuzz/fuzz_core.cpp -o $@

# Fuzzes the core for FUZZ_SECONDS; a crash or a broken invariant fails it.
fuzzcheck: test/fuzz/fuzz_core
	test/fuzz/fuzz_core -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=test/fuzz/ \
		-print_final_stats=1

# The core alone under Google Benchmark; test/bench/run runs it with the SQL benchmarks.
test/bench/core_bench: $(CORE_SOURCES) $(CORE_HEADERS) test/bench/core_bench.cpp
	$(CXX) -std=c++17 -O2 -Wall -Wextra -Werror -I$(srcdir)/src $(CORE_SOURCES) \
		test/bench/core_bench.cpp -lbenchmark -lbenchmark_main -pthread -o $@

# The release zip that PGXN and its client take, built from the committed tree (HEAD) with
# META.json, which is made from META.json.in and the control file's version:
# make dist [DISTDIR=directory].
# The control file's MAJOR.MINOR as SemVer, which PGXN takes.
DISTVERSION = $(EXTVERSION).0
DISTDIR ?= .
META.json: $(srcdir)/META.json.in $(srcdir)/snowflake.control
	sed 's/@VERSION@/$(DISTVERSION)/g' $< > $@
dist: META.json
	git -C $(srcdir) archive --format=zip --prefix=$(EXTENSION)-$(DISTVERSION)/ \
		--add-file=$(abspath META.json) \
		-o $(abspath $(DISTDIR))/$(EXTENSION)-$(DISTVERSION).zip HEAD

# The error boundary (module.cpp): an ereport longjmps over C++ frames, so the glue may hold no
# standard-library type that owns memory or runs a destructor. The core may, and does not cross;
# it includes only the C++ standard library (headers without an extension) and itself, so that no
# PostgreSQL or C header can creep in.
OWNING_STD_TYPES = (std::(basic_string|string|wstring|u16string|u32string|vector|map|multimap|unordered_map|unordered_multimap|set|multiset|unordered_set|unordered_multiset|list|forward_list|deque|queue|priority_queue|stack|function|unique_ptr|shared_ptr|weak_ptr|optional|variant|any|[a-z]*stream|[a-z]*streambuf|regex|thread|jthread|lock_guard|unique_lock|scoped_lock|shared_lock)\b|using namespace std)
# The one write of the mark and the one raise of the generator (src/pg/mark/durable_mark.cpp,
# doc/design.md "One write, one raise"): outside the mark's room the glue only loads the shared
# values behind them, and never formats the mark file, logs its WAL record or raises the word.
MARK_RAW = snowflake::raise_floor|format_mark_file|(durable_mark_ms|logged_mark_ms|logged_mark_lsn|lease_floor_ms|after_last_id|mark_node_bits)\b(?!\s*\.\s*load\s*\()
boundarycheck: all
	@if grep -rnE --include='*.cpp' --include='*.hpp' '$(OWNING_STD_TYPES)' $(srcdir)/src/pg; then \
		echo "src/pg holds an owning standard-library type: an ereport would skip its destructor"; \
		exit 1; \
	fi
	@echo "src/pg: no owning standard-library type"
	@if grep -nE '^[[:space:]]*#[[:space:]]*include' $(srcdir)/src/core/*.cpp $(srcdir)/src/core/*.hpp | \
		grep -vE '#[[:space:]]*include[[:space:]]*(<[a-z_]+>|"core/[a-z_]+\.hpp")'; then \
		echo "src/core includes something other than the C++ standard library and core/"; \
		exit 1; \
	fi
	@echo "src/core: only the C++ standard library and core/"
	@python3 $(srcdir)/test/rooms_check.py $(srcdir)
	@if grep -rnP --include='*.cpp' --include='*.hpp' '$(MARK_RAW)' $(srcdir)/src/pg | \
		grep -vE '^$(srcdir)/src/pg/(mark/[a-z_]+\.(cpp|hpp)|shared_state\.hpp):'; then \
		echo "src/pg writes the mark or raises the generator outside the mark's room, src/pg/mark"; \
		exit 1; \
	fi
	@if grep -rnwP --include='*.cpp' --include='*.hpp' 'kXlogMark' $(srcdir)/src/pg | \
		grep -vE '^$(srcdir)/src/pg/(mark/[a-z_]+\.cpp|wal/[a-z_]+\.cpp|wal_records\.hpp):'; then \
		echo "src/pg names the mark's WAL record outside the mark's room and the WAL room"; \
		exit 1; \
	fi
	@if grep -rnE --include='*.cpp' --include='*.hpp' 'snowflake::next_id(_claimed)?\(' \
		$(srcdir)/src/pg | grep -v '^$(srcdir)/src/pg/generation/generate\.cpp:'; then \
		echo "src/pg issues ids outside src/pg/generation/generate.cpp"; \
		exit 1; \
	fi
	@echo "src/pg: one write of the mark, one raise of the generator, one issue of ids"

# An extension directory of its own, for PostgreSQL 18's extension_control_path and
# dynamic_library_path (README "Installation"): the control file and scripts in
# $(EXTENSION_DIR)/share/extension, the library in $(EXTENSION_DIR)/lib, as CloudNativePG mounts an
# extension's image; nothing goes into the server's own directories.
install-extension-dir: all
	@test -n "$(EXTENSION_DIR)" || \
		{ echo "Name the directory: make install-extension-dir EXTENSION_DIR=/path"; exit 1; }
	$(MKDIR_P) '$(EXTENSION_DIR)/share/extension' '$(EXTENSION_DIR)/lib'
	$(INSTALL_DATA) $(srcdir)/$(EXTENSION).control $(addprefix $(srcdir)/, $(DATA)) \
		'$(EXTENSION_DIR)/share/extension/'
	$(INSTALL_SHLIB) $(MODULE_big)$(DLSUFFIX) '$(EXTENSION_DIR)/lib/'

.PHONY: unitcheck fuzzcheck boundarycheck uninstall-docs dist install-extension-dir
