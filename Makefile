# napilab: make test-kernel (the lab's main job) and make test (its tests).
# Both install what they need from Debian when it is missing; run as root.

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
LAB := bin/lab
# 7.3 is here as stock-7.3 plus the fix for its hang on threaded=0 while down
# (stock-7.3 FAILs threaded-off-while-down and busy-poll-threaded: a real bug).
# lab run starts a kernel's runs once it is built, while the next builds, so
# the order sets when verdicts come: the fastest cold build first (stock-6.1,
# 10-13 min alone on 2 cores; also the base most often cached), a variant right
# after its base (ksoftirqd-6.12 reuses stock-6.12's tree: 1-16 min), the
# slowest last (7.3: stock-7.3's ~25 min, then the one-patch variant). The
# kselftest flavours and Debian image kselftest-under-toggle needs build after
# every plain kernel (a variant's on its base's flavour); lab kselftest below
# then finds them cached.
KERNELS ?= kernels/stock-6.1.yaml kernels/stock-6.12.yaml kernels/ksoftirqd-6.12.yaml \
	kernels/napi-stop-disabled-7.3.yaml
# The seed experiments run once each with their defaults: their assertions
# say the experiment ran as designed (scenarios/seeds/, docs/seeds.md).
SCENARIOS ?= $(wildcard scenarios/*.yaml scenarios/seeds/*.yaml)
# The perf scenarios (budgets against a baseline) run on the series kernels,
# in the modes each spec's series is about (modes:); each is measured against
# the stock spec it extends.
PERF_SCENARIOS ?= $(wildcard scenarios/perf/*.yaml)
PERF_KERNELS ?= kernels/threaded-napi-6.1.yaml kernels/ksoftirqd-6.12.yaml
# lab kselftest's default net set runs on these (the Debian image, the kernels'
# kselftest flavours).
KSELFTEST_KERNELS ?= kernels/stock-6.1.yaml kernels/stock-6.12.yaml
# Every scenario also runs once on these kernels' debug flavour (KASAN,
# lockdep, UBSAN, kmemleak: bugs that do not crash a plain kernel), at the
# rates its flavours: debug: gives, or SKIPs with the reason it gives there
# (stock-6.1.debug: 14 runs in 11 min).
DEBUG_KERNELS ?= kernels/stock-6.1.yaml kernels/stock-6.12.yaml
DEBUG_SCENARIOS ?= $(SCENARIOS)

# Host packages: QEMU, the kernel source (linux-source-7.3 is not installable on
# bookworm: the lab fetches it, see kernels/fetch.go), the kernel build dependencies, ccache,
# chromium (headless: the report screenshot test); for lab kselftest: debootstrap
# (the Debian image), clang and the libraries the net selftests link against.
APT_PKGS := qemu-system-x86 linux-source-6.1 linux-source-6.12 build-essential flex bison bc libelf-dev \
	ccache cpio xz-utils patch kmod iproute2 chromium \
	debootstrap clang llvm libnuma-dev libcap-dev libssl-dev libmnl-dev python3-yaml python3-jsonschema rsync

.PHONY: all deps lab test test-kernel test-lab test-short bench clean

all: lab

# deps installs the missing packages only, so a warm machine pays nothing.
deps:
	@missing=$$(for p in $(APT_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@[ -c /dev/net/tun ] || modprobe tun

lab:
	$(GO) build -o $(LAB) ./lab

# test-kernel builds the kernels (cached), boots each as soon as it is
# built and runs every shipped scenario on it, the race scenarios on the
# debug flavours, the perf scenarios on the series kernels against the stock
# kernel each extends, then the default upstream net selftests; the exit
# code is the worst verdict (0 PASS, 3 INCONCLUSIVE, 1 FAIL, 2 ERROR, in that
# order).
test-kernel: deps lab
	@$(LAB) run $(SCENARIOS) $(addprefix --kernel ,$(KERNELS)); rcode=$$?; \
	$(LAB) run $(DEBUG_SCENARIOS) --flavour debug $(addprefix --kernel ,$(DEBUG_KERNELS)); dcode=$$?; \
	$(LAB) run $(PERF_SCENARIOS) $(addprefix --kernel ,$(PERF_KERNELS)); pcode=$$?; \
	$(LAB) kselftest -q $(addprefix --kernel ,$(KSELFTEST_KERNELS)); kcode=$$?; \
	rank() { case $$1 in 0) echo 0;; 3) echo 1;; 1) echo 2;; *) echo 3;; esac; }; code=0; \
	for c in $$rcode $$dcode $$pcode $$kcode; do [ $$(rank $$c) -gt $$(rank $$code) ] && code=$$c; done; \
	echo "lab exit code $$code (run $$rcode, debug $$dcode, perf $$pcode, kselftest $$kcode; 0 PASS, 1 FAIL, 2 ERROR, 3 INCONCLUSIVE; make itself reports any failure as 2)"; exit $$code

# test runs in two tiers and stops at the first that fails: go vet and the
# short tests (no kernel build, no VM: about 2 min), then every test,
# including those that build and boot the real kernels (20-30 min warm).
# The long tier runs one package at a time (-p 1): the lab and runner
# packages both boot guests, and two guests beside each other on 2 cores
# starve the debug kernels' controls (a clean stock-6.1.debug missed
# NET_RX >= 1000 by 2 that way).
test: deps
	@echo "== tier 1: go vet, make test-short"; start=$$(date +%s); \
	$(GO) vet ./... && $(MAKE) -s test-short || exit 1; \
	echo "== tier 1 passed in $$(( $$(date +%s) - start ))s; tier 2: every test, real kernels"; start=$$(date +%s); \
	$(GO) test -count=1 -p 1 -timeout 85m ./... || exit 1; \
	echo "== tier 2 passed in $$(( $$(date +%s) - start ))s"

# test-lab is the lab's own regression test alone (make test runs it too):
# the positive-control kernels (real upstream bugs put back) must FAIL their
# scenarios, the base PASS, and the debug controls' plain builds PASS.
test-lab: deps
	NAPILAB_CONTROLS=all $(GO) test -count=1 -timeout 60m -run PositiveControls -v ./runner/

# test-short skips everything that builds or boots a kernel.
test-short:
	$(GO) test -count=1 -short ./...

# bench: boot to agent ready per machine (min/median/max, machines
# interleaved; NAPILAB_BENCH_MACHINES, NAPILAB_BENCH_BOOTS), a run's overhead
# over its declared duration, image build time and size, host-injector and
# in-guest flood rates under TCG; the variant rebuild only with
# NAPILAB_BENCH_BUILD=1 (it builds a kernel).
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

clean:
	rm -rf bin results/runs
