# unhex - the two commands of the README, plus deps and bench.
#   make run    install, build, start `unhex serve` on ./data with demo data
#   make test   install, build, run every test (Release and ASan+UBSan)
#   make bench  install, build, run the benchmarks (bench/RESULTS.md)
#   make deps   install the Debian packages (idempotent)
#   make install  the built binary, docs and a hardened systemd unit
#               (PREFIX=/usr/local, DESTDIR= for packaging; builds nothing:
#               run `make build` first)

MAKEFLAGS  += --no-print-directory
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
DATA       ?= ./data
# Loopback: `make run` is an open server (no token file), which unhex refuses
# on other addresses; docs/security.md shows how to serve a network.
LISTEN     ?= 127.0.0.1:4040
JOBS       ?= $(shell nproc)
FUZZ_SECONDS ?= 20
# -Werror (UNHEX_WERROR) is on for the test targets, as in CI, and off for
# `make build`/`make run`, so a newer compiler's new warnings never stop a user.
WERROR     ?= OFF
test test-release test-asan test-fuzz: WERROR = ON

.PHONY: all deps build asan fuzz run test test-release test-asan test-fuzz bench demo clean \
	install uninstall

all: build

deps:
	@bash .ci/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DUNHEX_WERROR=$(WERROR) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DUNHEX_SANITIZE=ON \
	    -DUNHEX_WERROR=$(WERROR) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

fuzz: deps
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DUNHEX_FUZZ=ON \
	    -DUNHEX_WERROR=$(WERROR) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets

# Demo data: one hour of three services ending now, with symbol files for
# every binary except libssl, so the UI shows names and one "not found".
demo: build
	@rm -rf $(BUILD)/demo $(BUILD)/demo-debug $(BUILD)/demo-debuginfo
	@$(BUILD)/bench/unhex-workload --out $(BUILD)/demo --services 3 --instances 4 \
	    --minutes 60 --end now --debug-dir $(BUILD)/demo-debug --quiet
	@mkdir -p $(BUILD)/demo-debuginfo
	@awk -F'\t' '$$3 !~ /libssl/ { print $$1 }' $(BUILD)/demo-debug/manifest.tsv | \
	    while read -r f; do cp "$(BUILD)/demo-debug/$$f" $(BUILD)/demo-debuginfo/; done

run: demo
	@$(BUILD)/cli/unhex serve --data $(DATA) --listen $(LISTEN) --preload $(BUILD)/demo \
	    --preload-debuginfo $(BUILD)/demo-debuginfo

test-release: build
	@cd $(BUILD) && ctest --output-on-failure -j 2

test-asan: asan
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j 2

test-fuzz: fuzz
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh

test: test-release test-asan test-fuzz

bench: build
	@bash bench/run.sh $(BUILD)

# Installation (docs/operations.md).  The unit goes where systemd looks for
# units of PREFIX (/usr/local/lib/systemd/system for the default).
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
DOCDIR     ?= $(PREFIX)/share/doc/unhex
UNITDIR    ?= $(PREFIX)/lib/systemd/system
UNHEX_BIN  ?= $(BUILD)/cli/unhex

install:
	@test -x $(UNHEX_BIN) || { echo "no $(UNHEX_BIN): run make build first" >&2; exit 1; }
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(UNITDIR)
	install -m 0755 $(UNHEX_BIN) $(DESTDIR)$(BINDIR)/unhex
	install -m 0644 README.md LICENSE docs/*.md $(DESTDIR)$(DOCDIR)/
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' dist/unhex.service.in \
	    >$(DESTDIR)$(UNITDIR)/unhex.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/unhex.service

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/unhex $(DESTDIR)$(UNITDIR)/unhex.service
	rm -rf $(DESTDIR)$(DOCDIR)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
