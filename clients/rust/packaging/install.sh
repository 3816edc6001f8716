#!/bin/sh
# Installs ldp's native client for C and C++ programs: the libraries, the header, pkg-config files and a CMake
# package, under a prefix (as `make install` would).
#
#   sh clients/rust/packaging/install.sh --prefix /opt/ldp [--features uploader] [--libdir DIR] [--destdir DIR]
#                                        [--from TARGET_DIR] [--no-build]
#
# It builds the release library first (`cargo build --release --locked --lib`, with --features as given) unless
# --no-build; --from takes the libraries from another folder of cargo's (target/debug/deps, say). It installs:
#
#   PREFIX/include/ldp_client.h
#   LIBDIR/libldp_client.so.VERSION, libldp_client.so.0 -> it, libldp_client.so -> libldp_client.so.0
#          (macOS: libldp_client.0.dylib, libldp_client.dylib -> it)
#   LIBDIR/libldp_client.a, libldp_client_static.a -> it
#   LIBDIR/pkgconfig/ldp_client.pc          pkg-config --cflags --libs ldp_client: the shared library (with or
#                                           without --static)
#   LIBDIR/pkgconfig/ldp_client-static.pc   pkg-config --cflags --libs ldp_client-static: the static library
#                                           (-lldp_client_static, a name no shared library has, and the system
#                                           libraries it needs; the same with --static)
#   LIBDIR/cmake/LdpClient/LdpClientConfig.cmake, LdpClientConfigVersion.cmake
#                                           find_package(LdpClient 0.1) -> LdpClient::ldp_client (shared),
#                                           LdpClient::ldp_client_static
#
# LIBDIR is PREFIX/lib unless --libdir. ldp_client.pc's Libs carry -Wl,-rpath,LIBDIR when LIBDIR is not one the
# dynamic linker searches anyway, and CMake puts the library's folder in a program's RUNPATH itself: programs built
# against the prefix run without LD_LIBRARY_PATH. --destdir stages the files under DIR (paths inside them stay
# those of PREFIX), as packagers do. With --features uploader the header's LDP_CLIENT_UPLOADER functions are
# declared for consumers (-DLDP_CLIENT_UPLOADER in the .pc files and on the CMake targets), with --features prio
# the Prio3 sharding's (LDP_CLIENT_PRIO); --features uploader,prio both; --features poplar1 Poplar1's
# (LDP_CLIENT_POPLAR1) and Prio3's (its reports are LdpDapReports).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
crate=$(dirname "$here")
prefix=""
libdir=""
destdir=""
from=""
features=""
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix=$2; shift 2 ;;
        --libdir) libdir=$2; shift 2 ;;
        --destdir) destdir=$2; shift 2 ;;
        --from) from=$2; shift 2 ;;
        --features) features=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$prefix" ] || { echo "install.sh: --prefix DIR is required" >&2; exit 2; }
case "$prefix" in /*) ;; *) prefix="$(pwd)/$prefix" ;; esac
[ -n "$libdir" ] || libdir="$prefix/lib"
case "$libdir" in /*) ;; *) libdir="$prefix/$libdir" ;; esac
includedir="$prefix/include"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$crate/Cargo.toml" | head -n 1)
abi=$(sed -n 's/^const ABI: u32 = \([0-9]*\);$/\1/p' "$crate/build.rs")
[ -n "$version" ] && [ -n "$abi" ] || { echo "install.sh: cannot read the version or the ABI" >&2; exit 1; }
major_minor=$(echo "$version" | cut -d. -f1-2)
major=$(echo "$version" | cut -d. -f1)
minor=$(echo "$version" | cut -d. -f2)

if [ "$build" = 1 ]; then
    if [ -n "$features" ]; then
        (cd "$crate" && cargo build --release --locked --lib --features "$features")
    else
        (cd "$crate" && cargo build --release --locked --lib)
    fi
fi
[ -n "$from" ] || from="$crate/target/release"

case "$(uname -s)" in
    Darwin) shared_src=libldp_client.dylib; real="libldp_client.$abi.dylib"; links="libldp_client.dylib" ;;
    *) shared_src=libldp_client.so; real="libldp_client.so.$version"
       links="libldp_client.so.$abi libldp_client.so" ;;
esac
for f in "$shared_src" libldp_client.a; do
    [ -f "$from/$f" ] || { echo "install.sh: $from/$f is missing (build first, or give --from)" >&2; exit 1; }
done

stage_lib="$destdir$libdir"
stage_inc="$destdir$includedir"
mkdir -p "$stage_lib/pkgconfig" "$stage_lib/cmake/LdpClient" "$stage_inc"
cp "$crate/include/ldp_client.h" "$stage_inc/ldp_client.h"
cp "$from/$shared_src" "$stage_lib/$real.tmp" && mv -f "$stage_lib/$real.tmp" "$stage_lib/$real"
cp "$from/libldp_client.a" "$stage_lib/libldp_client.a"
chmod 644 "$stage_inc/ldp_client.h" "$stage_lib/libldp_client.a"
# -lldp_client finds libldp_client.so before libldp_client.a (GNU ld, lld, Apple's ld); -lldp_client_static finds
# the archive alone. ldp_client-static.pc names it: -l:libldp_client.a is GNU ld's alone, and a full path to the
# archive is put before the program's objects by CMake's pkg_check_modules, where it resolves nothing.
ln -sf libldp_client.a "$stage_lib/libldp_client_static.a"
chmod 755 "$stage_lib/$real"
# libldp_client.so.0 -> libldp_client.so.0.1.0 (what programs load), libldp_client.so -> libldp_client.so.0 (what
# the linker finds for -lldp_client).
target=$real
for link in $links; do
    ln -sf "$target" "$stage_lib/$link"
    target=$link
done

case "$libdir" in
    /lib|/lib64|/usr/lib|/usr/lib64|/usr/local/lib|/usr/lib/*-linux-gnu|/lib/*-linux-gnu) rpath="" ;;
    *) rpath="-Wl,-rpath,\${libdir} " ;;
esac
cflags=""
definitions=""
given=",$(echo "$features" | tr ' ' ','),"
case "$given" in *,poplar1,*) given="$given,prio," ;; esac  # the feature poplar1 turns prio on: both declared
for feature in uploader:LDP_CLIENT_UPLOADER prio:LDP_CLIENT_PRIO poplar1:LDP_CLIENT_POPLAR1; do
    case "$given" in
        *,"${feature%%:*}",*) cflags="$cflags -D${feature#*:}"; definitions="${definitions:+$definitions;}${feature#*:}" ;;
    esac
done
case "$(uname -s)" in
    Darwin) static_libs="-lSystem -lc -lm"; shared_name="libldp_client.$abi.dylib"; soname="@rpath/$shared_name" ;;
    *) static_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"; shared_name="$real"; soname="libldp_client.so.$abi" ;;
esac

fill() {  # $1: template, $2: output
    sed -e "s|@PREFIX@|$prefix|g" -e "s|@LIBDIR@|$libdir|g" -e "s|@INCLUDEDIR@|$includedir|g" \
        -e "s|@VERSION@|$version|g" -e "s|@MAJOR_MINOR@|$major_minor|g" -e "s|@MAJOR@|$major|g" \
        -e "s|@MINOR@|$minor|g" -e "s|@ABI@|$abi|g" \
        -e "s|@RPATH@|$rpath|g" -e "s|@CFLAGS@|$cflags|g" -e "s|@DEFINITIONS@|$definitions|g" \
        -e "s|@STATIC_LIBS@|$static_libs|g" -e "s|@SHARED_NAME@|$shared_name|g" -e "s|@SONAME@|$soname|g" \
        "$1" > "$2"
    chmod 644 "$2"
}
fill "$here/ldp_client.pc.in" "$stage_lib/pkgconfig/ldp_client.pc"
fill "$here/ldp_client-static.pc.in" "$stage_lib/pkgconfig/ldp_client-static.pc"
fill "$here/LdpClientConfig.cmake.in" "$stage_lib/cmake/LdpClient/LdpClientConfig.cmake"
fill "$here/LdpClientConfigVersion.cmake.in" "$stage_lib/cmake/LdpClient/LdpClientConfigVersion.cmake"
echo "installed ldp_client $version (ABI $abi) under $destdir$prefix"
