# Thin front door: deps, build, test, and the default generation job. Experiments live in
# Makefile.experiments. Everything builds with CMake into build/.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
DEB_PACKAGES := cmake gcc make libcjson-dev libopenblas-openmp-dev libxxhash-dev libpcre2-dev libutf8proc-dev bubblewrap libcsv-dev gnuplot-nox
ZIPAGE := $(BUILD)/zipage

.PHONY: all deps build test test-slow generate devdeps clean
all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	else echo "deps: all Debian packages present"; fi

# first configure: make sure the Debian packages are there (fresh machine), then CMake
$(BUILD)/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest -L cpu -LE slow --output-on-failure -j $(JOBS)

test-slow: build
	cd $(BUILD) && ctest -L slow --output-on-failure

# The main job on a built-in default: a tiny Qwen3-shaped checkpoint written by mkmodel,
# then greedy generation through the engine.
GEN_MODEL ?= $(BUILD)/models/tiny-qwen3
generate: build
	@[ -f $(GEN_MODEL)/model.safetensors ] || $(ZIPAGE) mkmodel --preset tiny-qwen3 --out $(GEN_MODEL)
	$(ZIPAGE) generate --model $(GEN_MODEL) --prompt-ids 1,17,42,99,256,7 --max-tokens 48 --temperature 0.7 --n 4 --seed 1

# .debs the GPU machine needs to build (it has no apt access): carried there as .devdeps
devdeps:
	mkdir -p .devdeps && cd .devdeps && apt-get download libcjson1 libcjson-dev libxxhash0 libxxhash-dev \
	  libopenblas0-openmp libopenblas-openmp-dev libgfortran5 \
	  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2 \
	  libcsv-dev libcsv3

clean:
	rm -rf $(BUILD)

include Makefile.experiments
