#!/usr/bin/env bash
# Installs Sluice from a build folder into a scratch prefix, builds examples/embed against that
# prefix alone (find_package(Sluice), nothing of the source tree on its include path), runs it on
# the memory store and on a redis-server of its own, and links a program by sluice.pc. Builds
# examples/embed_core on Sluice::core alone and by sluice-core.pc, and checks that neither names
# hiredis, libpq, OpenSSL or gRPC.
# Usage: embed_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1")
source=$(realpath "$2")
scratch=$(mktemp -d /tmp/sluice-embed-test.XXXXXX)
redis_pid=
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >"$scratch/install.log"
for f in bin/sluice include/sluice/limiter.h lib/cmake/Sluice/SluiceConfig.cmake \
  lib/cmake/Sluice/SluiceConfigVersion.cmake lib/cmake/Sluice/SluiceTargets.cmake \
  lib/pkgconfig/sluice.pc lib/pkgconfig/sluice-core.pc lib/pkgconfig/sluice-redis.pc \
  lib/pkgconfig/sluice-postgres.pc include/sluice/version.h etc/sluice/sluice.yaml \
  lib/systemd/system/sluice.service; do
  [ -e "$prefix/$f" ] || fail "cmake --install wrote no $f"
done
for library in core redis postgres; do
  ls "$prefix"/lib/libsluice_$library.* >/dev/null 2>&1 ||
    fail "cmake --install wrote no libsluice_$library"
done
# An install into a folder names that folder in the unit, and writes nothing outside it.
grep -qx "ExecStart=$prefix/bin/sluice serve --config $prefix/etc/sluice/sluice.yaml" \
  "$prefix/lib/systemd/system/sluice.service" || fail "the unit's ExecStart names other paths"
# Every file installed lies under the prefix.
if grep -v "^$prefix/" "$build/install_manifest.txt"; then fail "installed outside $prefix"; fi

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$source/examples/embed" -B "$scratch/embed" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$scratch/configure.log" ||
  { cat "$scratch/configure.log"; fail "examples/embed does not configure"; }
cmake --build "$scratch/embed" >"$scratch/build.log" ||
  { cat "$scratch/build.log"; fail "examples/embed does not build"; }
# Its headers come from the prefix alone.
if grep -oE -- "-(I|isystem) ?[^ ]*" "$scratch/embed/compile_commands.json" |
  grep -E "$source/(include|src)|$build"; then
  fail "examples/embed compiled with the source tree or build folder on its include path"
fi
grep -q -- "$prefix/include" "$scratch/embed/compile_commands.json" ||
  fail "examples/embed did not take its headers from $prefix/include"

check_decisions() {  # NAME OUTPUT
  local expected="$1 1 allow per-ip=ok/99 per-key=ok/1 per-tenant=ok/999
$1 2 allow per-ip=ok/98 per-key=ok/0 per-tenant=ok/998
$1 3 reject per-ip=ok/97 per-key=no/0 per-tenant=ok/997 retry_after=30s"
  [ "$2" = "$expected" ] || fail "$1: expected
$expected
got
$2"
}
# A shared library's users load it from the prefix.
if [ -e "$prefix/lib/libsluice_core.so" ]; then
  ldd "$scratch/embed/embed" >"$scratch/ldd"
  grep -q "$prefix/lib/libsluice_redis.so" "$scratch/ldd" ||
    fail "examples/embed does not load the installed libsluice_redis.so: $(cat "$scratch/ldd")"
fi
out=$("$scratch/embed/embed") || fail "embed exited $?"
check_decisions memory "$out"

socket=$scratch/redis.sock
redis-server --port 0 --unixsocket "$socket" --save '' --appendonly no >"$scratch/redis.log" &
redis_pid=$!
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.05; done
[ -S "$socket" ] || fail "redis-server did not start"
out=$("$scratch/embed/embed" "unix://$socket") || fail "embed on Redis exited $?: $out"
check_decisions memory "$(grep '^memory' <<<"$out")"
check_decisions redis "$(grep '^redis' <<<"$out")"

# sluice.pc: the flags of a program built without CMake.
cat >"$scratch/pc.cc" <<'PROGRAM'
#include <sluice/status.h>
#include <iostream>
int main() { std::cout << sluice::Status::Unavailable("down").ToString() << "\n"; }
PROGRAM
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
c++ -std=c++20 "$scratch/pc.cc" -o "$scratch/pc" $(pkg-config --cflags --libs sluice) \
  ${SLUICE_EMBED_LDFLAGS:-} || fail "a program does not link with pkg-config's flags for sluice"
# Outside the system's folders the loader is told where a shared libsluice is, as a user would.
[ "$(LD_LIBRARY_PATH=$prefix/lib "$scratch/pc")" = "unavailable: down" ] ||
  fail "the pkg-config program printed otherwise"
# Sluice::core: its link interface, and what a program built on it links, name none of the
# networked stores' libraries.
networked='hiredis|pq|openssl|ssl|crypto|grpc|protobuf'
core_links=$(sed -n '/^set_target_properties(Sluice::core /,/^)/p' \
  "$prefix/lib/cmake/Sluice/SluiceTargets.cmake" | grep INTERFACE_LINK_LIBRARIES) ||
  fail "SluiceTargets.cmake has no link interface for Sluice::core"
if grep -Ei "$networked" <<<"$core_links"; then fail "Sluice::core links a networked library"; fi
cmake -S "$source/examples/embed_core" -B "$scratch/embed_core" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/configure_core.log" ||
  { cat "$scratch/configure_core.log"; fail "examples/embed_core does not configure"; }
cmake --build "$scratch/embed_core" -v >"$scratch/build_core.log" ||
  { cat "$scratch/build_core.log"; fail "examples/embed_core does not build"; }
if grep -E -- "-o [^ ]*embed_core " "$scratch/build_core.log" | grep -Ei "$networked"; then
  fail "examples/embed_core linked a networked library"
fi
expected_core="1 allow 1
2 allow 0
3 reject 0 retry_after=30s"
[ "$(LD_LIBRARY_PATH=$prefix/lib "$scratch/embed_core/embed_core")" = "$expected_core" ] ||
  fail "examples/embed_core printed otherwise"
pc_core=$(pkg-config --cflags --libs sluice-core)
if grep -Ei "$networked" <<<"$pc_core"; then fail "sluice-core.pc names a networked library"; fi
# shellcheck disable=SC2086
c++ -std=c++20 "$source/examples/embed_core/main.cc" -o "$scratch/pc_core" $pc_core \
  ${SLUICE_EMBED_LDFLAGS:-} || fail "a program does not link with sluice-core.pc's flags"
[ "$(LD_LIBRARY_PATH=$prefix/lib "$scratch/pc_core")" = "$expected_core" ] ||
  fail "the sluice-core.pc program printed otherwise"
echo "PASS"
