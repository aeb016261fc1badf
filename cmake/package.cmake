# SPDX-License-Identifier: Apache-2.0
# The Debian package, made by CPack's DEB generator from the install rules
# (`make deb`, or `cpack -G DEB` in build/): kiln, libkiln.so,
# libkiln-malloc.so, the headers, pkg-config files, manual pages and
# completion under /usr.  Its Depends are computed by dpkg-shlibdeps from
# the ELF files (CPACK_DEBIAN_PACKAGE_SHLIBDEPS), never listed by hand;
# the libraries loaded on first use, by dpkg-query (cmake/lazylib.cmake).
# docs/install.md says why CPack and not dpkg-buildpackage.

# The copyright file (DEP-5) and the changelog Debian policy asks for.
configure_file(${CMAKE_SOURCE_DIR}/debian/changelog.in
               ${CMAKE_BINARY_DIR}/debian/changelog @ONLY)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/debian/changelog.gz
  COMMAND gzip -9nc ${CMAKE_BINARY_DIR}/debian/changelog > ${CMAKE_BINARY_DIR}/debian/changelog.gz
  DEPENDS ${CMAKE_BINARY_DIR}/debian/changelog
  COMMENT "debian changelog.gz")
add_custom_target(debian-changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/debian/changelog.gz)
install(FILES ${CMAKE_SOURCE_DIR}/debian/copyright
              ${CMAKE_BINARY_DIR}/debian/changelog.gz
        DESTINATION share/doc/kiln)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "kiln maintainers <kiln@kiln-profiler.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "profiler for Linux: CPU, events, heap; reads and draws other profilers' files")
# The extended description (CPack puts the summary above it).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"kiln records CPU and event profiles of commands, processes or the whole
machine through perf_event_open, or in process with its preloaded agent
libkiln.so where perf_event_open is refused; traces the heap of a command
(allocations, peak, leaks); counts events as perf stat does.  It reads
pprof, perf.data, perf script text, collapsed stacks, speedscope, Chrome
and gperftools profiles, valgrind massif and heaptrack files, and prints
tables, draws flame graphs and call graphs, converts between formats and
serves a web UI.  libkiln.so also serves Go's /debug/pprof endpoints from
inside C, C++ and Rust programs.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)         # kiln_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The libraries kiln loads on first use (cmake/lazylib.cmake) are not
# linked, so dpkg-shlibdeps cannot see them: their packages, found by
# dpkg-query from the files the build used, go first; CPack appends the
# computed ones.
list(REMOVE_DUPLICATES KILN_LAZY_PACKAGES)
string(JOIN ", " CPACK_DEBIAN_PACKAGE_DEPENDS ${KILN_LAZY_PACKAGES})
# The programs kiln compares itself with or drives are suggestions only.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "linux-perf, golang-go")
# libkiln.so and libkiln-malloc.so in /usr/lib: the ldconfig trigger
# (lintian: lacks-ldconfig-trigger).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/debian/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_SOURCE_IGNORE_FILES "/build.*/;/\\\\.git/;node_modules")
include(CPack)
