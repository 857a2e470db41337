#!/usr/bin/env bash
# cmake/build_info.cmake on a scratch git repository: a clean tree gives the project's version
# and the commit; a modified tracked file gives VERSION+dirty; no git, no commit.
# Usage: version_test.sh SOURCE_DIR
set -euo pipefail
script=$(realpath "$1")/cmake/build_info.cmake
scratch=$(mktemp -d /tmp/sluice-version-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
build_info() {  # SOURCE: prints the version and the commit it found
  cmake -DSOURCE_DIR="$1" -DOUTPUT_DIR="$scratch/out" -DVERSION=1.2.3 -P "$script"
  sed -n 's/^#define SLUICE_BUILD_VERSION "\([^"]*\)".*/\1/p; s/^#define SLUICE_COMMIT "\(.*\)".*/\1/p' \
    "$scratch/out/build_info.h" | paste -sd ' '
  grep -q "set(CPACK_PACKAGE_VERSION \"$(sed -n 's/^#define SLUICE_BUILD_VERSION "\([^"]*\)".*/\1/p' \
    "$scratch/out/build_info.h")\")" "$scratch/out/package_version.cmake" ||
    fail "package_version.cmake disagrees with build_info.h"
}

mkdir "$scratch/tree"
[ "$(build_info "$scratch/tree")" = "1.2.3 " ] || fail "outside git: $(build_info "$scratch/tree")"

git -C "$scratch/tree" init -q
echo one >"$scratch/tree/file"
git -C "$scratch/tree" add file
git -C "$scratch/tree" -c user.name=t -c user.email=t@t commit -qm one
commit=$(git -C "$scratch/tree" rev-parse --short=12 HEAD)
[ "$(build_info "$scratch/tree")" = "1.2.3 $commit" ] || fail "clean: $(build_info "$scratch/tree")"
echo untracked >"$scratch/tree/other"
[ "$(build_info "$scratch/tree")" = "1.2.3 $commit" ] || fail "untracked: $(build_info "$scratch/tree")"
echo two >"$scratch/tree/file"
[ "$(build_info "$scratch/tree")" = "1.2.3+dirty $commit" ] ||
  fail "modified: $(build_info "$scratch/tree")"
echo PASS
