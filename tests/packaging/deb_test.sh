#!/usr/bin/env bash
# Builds the Debian package from a build folder with cpack, checks its control fields and
# contents, runs the command it holds from an extracted root (--version, check-config on the
# shipped configuration), has `systemd-analyze verify` read its unit, and lintian find no error.
# Usage: deb_test.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
scratch=$(mktemp -d /tmp/sluice-deb-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The package holds the command alone, built on the static library; a shared libsluice belongs
# in a library package of its own (Debian's policy), which the project does not make.
if grep -qiE "^BUILD_SHARED_LIBS:[A-Z]+=(ON|1|TRUE|YES)$" "$build/CMakeCache.txt"; then
  echo "SKIP: the Debian package is made from a static build (BUILD_SHARED_LIBS=OFF)"
  exit 77
fi

# Into a folder of the test's, so that the build folder keeps no package or staging tree.
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$scratch/out" >"$scratch/cpack.log" ||
  { cat "$scratch/cpack.log"; fail "cpack -G DEB failed"; }
debs=("$scratch"/out/*.deb)
[ ${#debs[@]} -eq 1 ] || fail "cpack made ${#debs[@]} packages: ${debs[*]}"
deb=${debs[0]}

# --- control fields ---------------------------------------------------------------------------
field() { dpkg-deb --field "$deb" "$1"; }
version=$(field Version)
arch=$(field Architecture)
[ "$(field Package)" = sluice ] || fail "Package: $(field Package)"
[ "$arch" = "$(dpkg --print-architecture)" ] || fail "Architecture: $arch"
[ "$(basename "$deb")" = "sluice_${version}_${arch}.deb" ] || fail "file name $(basename "$deb")"
depends=$(field Depends)
# From dpkg-shlibdeps: the libraries the command links, with versions.
versioned() {  # PACKAGE_PREFIX: whether Depends has a package of that name with a version
  local dependency
  IFS=',' read -ra dependencies <<<"$depends"
  for dependency in "${dependencies[@]}"; do
    dependency=${dependency# }
    [[ $dependency == "$1"*" (>= "* ]] && return 0
  done
  return 1
}
for lib in libc6 libstdc++6 libhiredis libpq5 libssl libyaml-cpp libgrpc++; do
  versioned "$lib" || fail "Depends lacks $lib: $depends"
done
grep -q "init-system-helpers" <<<"$depends" || fail "Depends lacks init-system-helpers: $depends"
[ -n "$(field Description)" ] || fail "no Description"
[ "$(dpkg-deb --info "$deb" conffiles)" = /etc/sluice/sluice.yaml ] ||
  fail "conffiles: $(dpkg-deb --info "$deb" conffiles)"
# (Read into files first: grep -q ending a pipeline early fails its writer under pipefail.)
dpkg-deb --info "$deb" >"$scratch/info"
for script in postinst prerm postrm; do
  grep -qE "^ +[0-9]+ bytes, +[0-9]+ lines +\* +$script " "$scratch/info" ||
    fail "no executable $script"
done

# --- contents -----------------------------------------------------------------------------------
dpkg-deb --contents "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$scratch/files"
for f in /usr/bin/sluice /etc/sluice/sluice.yaml /lib/systemd/system/sluice.service \
  /usr/share/man/man1/sluice.1.gz /usr/share/doc/sluice/copyright \
  /usr/share/doc/sluice/changelog.gz /usr/share/doc/sluice/architecture.md \
  /usr/share/doc/sluice/configuration.md /usr/share/doc/sluice/gateway.md; do
  grep -qx "$f" "$scratch/files" || fail "the package lacks $f"
done
# The runtime alone: no headers, no static library, nothing under /usr/local.
if grep -E "^/usr/(include|local)|\.a$" "$scratch/files"; then fail "development files packaged"; fi

root=$scratch/root
dpkg-deb --extract "$deb" "$root"
"$root/usr/bin/sluice" --version >"$scratch/version" || fail "sluice --version exited $?"
read -r name command_version _ <"$scratch/version"
[ "$name $command_version" = "sluice $version" ] ||
  fail "sluice --version says '$(cat "$scratch/version")', the package $version"
"$root/usr/bin/sluice" check-config "$root/etc/sluice/sluice.yaml" >"$scratch/check" ||
  fail "check-config refuses the shipped configuration: $(cat "$scratch/check")"
grep -q ": ok (" "$scratch/check" || fail "check-config said $(cat "$scratch/check")"

zcat "$root/usr/share/man/man1/sluice.1.gz" >"$scratch/sluice.1"
grep -q '^\.TH SLUICE "1"' "$scratch/sluice.1" || fail "no man page"
grep -qF 'check\-config' "$scratch/sluice.1" || fail "the man page lacks the subcommands"
zcat "$root/usr/share/doc/sluice/changelog.gz" >"$scratch/changelog"
[ "$(head -1 "$scratch/changelog")" = \
  "sluice ($version) unstable; urgency=medium" ] || fail "the changelog's first entry is not $version"
[ "$(head -1 "$root/usr/share/doc/sluice/copyright")" = \
  "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" ] ||
  fail "copyright is not machine-readable"

# --- the unit -------------------------------------------------------------------------------------
unit=$root/lib/systemd/system/sluice.service
for line in "Type=notify" "ExecStart=/usr/bin/sluice serve --config /etc/sluice/sluice.yaml" \
  'ExecReload=/bin/kill -HUP $MAINPID' "DynamicUser=yes" "LoadCredential=redis-password" \
  "LogsDirectory=sluice" "NoNewPrivileges=yes" "ProtectSystem=strict" "ProtectHome=yes" \
  "PrivateTmp=yes" "CapabilityBoundingSet=CAP_NET_BIND_SERVICE" "WantedBy=multi-user.target"; do
  grep -qxF "$line" "$unit" || fail "sluice.service lacks $line"
done
grep -qE "^LimitNOFILE=[0-9]{5,}$" "$unit" || fail "sluice.service's LimitNOFILE is low or missing"
# verify checks that the unit's commands exist: the copy it reads runs the extracted
# /usr/bin/sluice (--root would need a whole system there, down to sysinit.target).
sed "s|/usr/bin/sluice|$root/usr/bin/sluice|" "$unit" >"$scratch/sluice.service"
systemd-analyze verify --man=no "$scratch/sluice.service" >"$scratch/verify" 2>&1 ||
  { cat "$scratch/verify"; fail "systemd-analyze verify refused the unit"; }
[ ! -s "$scratch/verify" ] || { cat "$scratch/verify"; fail "systemd-analyze verify warned"; }

# --- lintian --------------------------------------------------------------------------------------
lintian --fail-on error --tag-display-limit 0 "$deb" >"$scratch/lintian" 2>&1 ||
  { cat "$scratch/lintian"; fail "lintian found errors"; }
cat "$scratch/lintian"  # what it still warns about, for the log
echo "PASS $(basename "$deb")"
